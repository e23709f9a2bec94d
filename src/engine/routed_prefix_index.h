// RoutedPrefixIndex: what the cache_aware method believes each replica's radix cache holds —
// the prompts routed to it (SGLang's router keeps the same "approximate tree"), as the set of
// their prefixes, bounded per replica with the least recently routed prefixes dropped first.
// Not thread-safe: the DataParallelController calls it under its routing lock.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sgl::engine {

class RoutedPrefixIndex {
 public:
  // `capacity`: prefixes kept per replica (each stands for one cached token, so a replica's KV
  // slot count mirrors what its cache can hold).
  RoutedPrefixIndex(int num_replicas, int64_t capacity);

  // The hash of every prefix of `ids` in `cache_namespace` (entry k: ids[0..k]; the same ids in
  // another namespace hash apart, as their KV is cached apart); computed once per request and
  // shared by match() and insert().
  static void prefix_hashes(std::span<const int32_t> ids, std::string_view cache_namespace,
                            std::vector<uint64_t>& out);
  // Tokens of the prompt (given by its prefix hashes) believed cached on `replica`.
  int64_t match(int replica, std::span<const uint64_t> hashes) const;
  // Records the prompt as routed to `replica` now.
  void insert(int replica, std::span<const uint64_t> hashes);
  int64_t size(int replica) const;
  // Forgets what `replica` holds (its cache was flushed).
  void clear(int replica);

 private:
  void evict(std::unordered_map<uint64_t, uint64_t>& prefixes);

  const int64_t capacity_;
  // Per replica: prefix hash -> the routing tick that last touched it. A prompt touches all its
  // prefixes with one tick, so a prefix is never older than a longer one: dropping the oldest
  // ticks keeps every remaining prefix's shorter prefixes (match() stops at the first miss).
  std::vector<std::unordered_map<uint64_t, uint64_t>> prefixes_;
  uint64_t tick_ = 0;
};

}  // namespace sgl::engine
