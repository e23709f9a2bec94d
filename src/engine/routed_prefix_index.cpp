// RoutedPrefixIndex: prefix hashes with tick-ordered eviction.
#include "engine/routed_prefix_index.h"

#include <algorithm>
#include <functional>

#include "core/check.h"

namespace sgl::engine {
namespace {

// splitmix64's finalizer: a prefix hash mixes its parent's hash with the next id.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

RoutedPrefixIndex::RoutedPrefixIndex(int num_replicas, int64_t capacity)
    : capacity_(std::max<int64_t>(capacity, 1)),
      prefixes_(static_cast<size_t>(std::max(num_replicas, 1))) {}

void RoutedPrefixIndex::prefix_hashes(std::span<const int32_t> ids,
                                      std::string_view cache_namespace,
                                      std::vector<uint64_t>& out) {
  out.resize(ids.size());
  // The default namespace starts from 0, another from its name's hash (a collision only costs a
  // routing guess, never sharing: the replica's own cache keeps namespaces apart).
  uint64_t h = cache_namespace.empty() ? 0 : mix(std::hash<std::string_view>{}(cache_namespace));
  for (size_t i = 0; i < ids.size(); ++i) {
    h = mix(h ^ mix(static_cast<uint64_t>(static_cast<uint32_t>(ids[i])) + i));
    out[i] = h;
  }
}

int64_t RoutedPrefixIndex::match(int replica, std::span<const uint64_t> hashes) const {
  const auto& prefixes = prefixes_.at(static_cast<size_t>(replica));
  int64_t n = 0;
  while (n < static_cast<int64_t>(hashes.size()) &&
         prefixes.contains(hashes[static_cast<size_t>(n)])) {
    ++n;
  }
  return n;
}

void RoutedPrefixIndex::insert(int replica, std::span<const uint64_t> hashes) {
  auto& prefixes = prefixes_.at(static_cast<size_t>(replica));
  ++tick_;
  // A prompt longer than the capacity keeps its first `capacity` tokens (the shared part).
  const size_t n = std::min(hashes.size(), static_cast<size_t>(capacity_));
  for (size_t i = 0; i < n; ++i) prefixes[hashes[i]] = tick_;
  if (static_cast<int64_t>(prefixes.size()) > capacity_) evict(prefixes);
}

int64_t RoutedPrefixIndex::size(int replica) const {
  return static_cast<int64_t>(prefixes_.at(static_cast<size_t>(replica)).size());
}

void RoutedPrefixIndex::clear(int replica) { prefixes_.at(static_cast<size_t>(replica)).clear(); }

// Drops the oldest ticks down to 3/4 of the capacity, so that eviction's sort is paid once per
// capacity/4 insertions, not on each.
void RoutedPrefixIndex::evict(std::unordered_map<uint64_t, uint64_t>& prefixes) {
  std::vector<uint64_t> ticks;
  ticks.reserve(prefixes.size());
  for (const auto& [hash, tick] : prefixes) ticks.push_back(tick);
  const size_t keep = static_cast<size_t>(capacity_ - capacity_ / 4);
  const size_t drop = ticks.size() - std::min(keep, ticks.size());
  if (drop == 0) return;
  std::nth_element(ticks.begin(), ticks.begin() + static_cast<ptrdiff_t>(drop - 1), ticks.end());
  // Whole ticks go (a prompt's prefixes stay or leave together), so a few more may go; the
  // prompt just routed always stays.
  const uint64_t cutoff = std::min(ticks[drop - 1], tick_ - 1);
  std::erase_if(prefixes, [cutoff](const auto& entry) { return entry.second <= cutoff; });
}

}  // namespace sgl::engine
