// WordCache: a thread-safe, sharded, bounded cache from a pre-tokenized word to its token ids.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sgl::tokenizer {

class WordCache {
 public:
  // `capacity`: total entries; a full shard is cleared before the next insert.
  explicit WordCache(size_t capacity);
  ~WordCache();
  WordCache(const WordCache&) = delete;
  WordCache& operator=(const WordCache&) = delete;

  // Appends the cached ids of `word` to `out`; false on a miss.
  bool lookup(std::string_view word, std::vector<int32_t>& out) const;
  void insert(std::string_view word, std::span<const int32_t> ids) const;

 private:
  struct Shard;
  std::unique_ptr<Shard[]> shards_;
  size_t shard_capacity_;
};

}  // namespace sgl::tokenizer
