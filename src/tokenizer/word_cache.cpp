// WordCache: shards of (mutex, hash map); the shard is chosen by the word's hash.
#include "tokenizer/word_cache.h"

#include <functional>
#include <mutex>
#include <unordered_map>

namespace sgl::tokenizer {
namespace {

constexpr size_t kNumShards = 32;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace

struct WordCache::Shard {
  std::mutex mutex;
  std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> map;
};

WordCache::WordCache(size_t capacity)
    : shards_(new Shard[kNumShards]), shard_capacity_(capacity / kNumShards + 1) {}

WordCache::~WordCache() = default;

bool WordCache::lookup(std::string_view word, std::vector<int32_t>& out) const {
  const size_t h = StringHash{}(word);
  Shard& shard = shards_[(h >> 7) % kNumShards];
  std::lock_guard<std::mutex> lock(shard.mutex);
  auto it = shard.map.find(word);
  if (it == shard.map.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::insert(std::string_view word, std::span<const int32_t> ids) const {
  const size_t h = StringHash{}(word);
  Shard& shard = shards_[(h >> 7) % kNumShards];
  std::lock_guard<std::mutex> lock(shard.mutex);
  if (shard.map.size() >= shard_capacity_) shard.map.clear();
  shard.map.try_emplace(std::string(word), ids.begin(), ids.end());
}

}  // namespace sgl::tokenizer
