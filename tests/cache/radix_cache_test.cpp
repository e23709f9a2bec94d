// RadixCache: match/insert/split, locks, LRU eviction, request caching, disabled mode, fuzzing.
#include "cache/radix_cache.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "cache/token_to_kv_pool_allocator.h"

namespace sgl::cache {
namespace {

using Ids = std::vector<int32_t>;

Ids to_ids(std::span<const int32_t> s) { return Ids(s.begin(), s.end()); }

// Asserts both the tree's and the allocator's invariants plus slot conservation.
void expect_consistent(const RadixCache& cache, const TokenToKvPoolAllocator& alloc,
                       int64_t held_outside) {
  const Status s = cache.check_integrity(alloc, held_outside);
  EXPECT_TRUE(s.ok()) << s.to_string() << "\n" << cache.debug_string();
  const Status a = alloc.check_integrity();
  EXPECT_TRUE(a.ok()) << a.to_string();
}

TEST(RadixCache, MatchOnEmptyTreeFindsNothing) {
  RadixCache cache;
  MatchResult m = cache.match_prefix(Ids{1, 2, 3});
  EXPECT_TRUE(m.device_indices.empty());
  EXPECT_EQ(m.last_node, cache.root());
  m = cache.match_prefix(Ids{});
  EXPECT_TRUE(m.device_indices.empty());
  EXPECT_EQ(m.last_node, cache.root());
  EXPECT_EQ(cache.total_size(), 0);
  EXPECT_TRUE(cache.check_integrity().ok());
}

TEST(RadixCache, InsertThenMatchExact) {
  RadixCache cache;
  EXPECT_EQ(cache.insert(Ids{1, 2, 3}, Ids{10, 11, 12}), 0);
  const MatchResult m = cache.match_prefix(Ids{1, 2, 3});
  EXPECT_EQ(m.device_indices, (Ids{10, 11, 12}));
  EXPECT_EQ(to_ids(m.last_node->key()), (Ids{1, 2, 3}));
  EXPECT_EQ(m.last_node->parent(), cache.root());
  EXPECT_EQ(cache.total_size(), 3);
  EXPECT_EQ(cache.evictable_size(), 3);
  EXPECT_EQ(cache.protected_size(), 0);
  // A longer query matches the whole cached sequence and stops there.
  EXPECT_EQ(cache.match_prefix(Ids{1, 2, 3, 4}).device_indices, (Ids{10, 11, 12}));
  EXPECT_TRUE(cache.check_integrity().ok());
}

TEST(RadixCache, PartialMatchSplitsNode) {
  RadixCache cache;
  EXPECT_EQ(cache.insert(Ids{1, 2, 3, 4}, Ids{10, 11, 12, 13}), 0);
  const MatchResult m = cache.match_prefix(Ids{1, 2, 9});
  EXPECT_EQ(m.device_indices, (Ids{10, 11}));
  ASSERT_NE(m.last_node, cache.root());
  EXPECT_EQ(to_ids(m.last_node->key()), (Ids{1, 2}));
  EXPECT_EQ(to_ids(m.last_node->value()), (Ids{10, 11}));
  EXPECT_EQ(m.last_node->num_children(), 1u);
  EXPECT_EQ(cache.root()->num_children(), 1u);
  EXPECT_EQ(cache.total_size(), 4);  // splitting moves no tokens
  EXPECT_TRUE(cache.check_integrity().ok()) << cache.debug_string();
  // The split is invisible to later matches.
  const MatchResult full = cache.match_prefix(Ids{1, 2, 3, 4, 5});
  EXPECT_EQ(full.device_indices, (Ids{10, 11, 12, 13}));
  EXPECT_EQ(to_ids(full.last_node->key()), (Ids{3, 4}));
  EXPECT_EQ(full.last_node->parent(), m.last_node);
}

TEST(RadixCache, DivergentBranches) {
  RadixCache cache;
  EXPECT_EQ(cache.insert(Ids{1, 2, 3}, Ids{10, 11, 12}), 0);
  EXPECT_EQ(cache.insert(Ids{1, 2, 4}, Ids{20, 21, 22}), 2);
  EXPECT_EQ(cache.insert(Ids{5, 6}, Ids{30, 31}), 0);
  EXPECT_EQ(cache.root()->num_children(), 2u);
  EXPECT_EQ(cache.match_prefix(Ids{1, 2, 3}).device_indices, (Ids{10, 11, 12}));
  EXPECT_EQ(cache.match_prefix(Ids{1, 2, 4}).device_indices, (Ids{10, 11, 22}));
  EXPECT_EQ(cache.match_prefix(Ids{5, 6, 7}).device_indices, (Ids{30, 31}));
  EXPECT_EQ(cache.match_prefix(Ids{1, 7}).device_indices, (Ids{10}));
  EXPECT_TRUE(cache.match_prefix(Ids{7}).device_indices.empty());
  // The tree took only the divergent tail of the second insert: 20, 21 stayed with the caller.
  EXPECT_EQ(cache.total_size(), 3 + 1 + 2);
  EXPECT_TRUE(cache.check_integrity().ok()) << cache.debug_string();
}

TEST(RadixCache, InsertReturnsAlreadyCachedPrefixLength) {
  RadixCache cache;
  EXPECT_EQ(cache.insert(Ids{1, 2, 3}, Ids{10, 11, 12}), 0);
  EXPECT_EQ(cache.insert(Ids{1, 2, 3, 4, 5}, Ids{20, 21, 22, 23, 24}), 3);
  EXPECT_EQ(cache.match_prefix(Ids{1, 2, 3, 4, 5}).device_indices, (Ids{10, 11, 12, 23, 24}));
  EXPECT_EQ(cache.insert(Ids{1, 2}, Ids{30, 31}), 2);  // wholly cached, ends inside a node
  EXPECT_EQ(cache.insert(Ids{1, 2, 3, 4, 5}, Ids{40, 41, 42, 43, 44}), 5);
  EXPECT_EQ(cache.insert(Ids{}, Ids{}), 0);
  EXPECT_EQ(cache.total_size(), 5);
  EXPECT_TRUE(cache.check_integrity().ok()) << cache.debug_string();
}

TEST(RadixCache, LockProtectsFromEvictionAndMovesSizes) {
  TokenToKvPoolAllocator alloc(16);
  RadixCache cache;
  Ids a = *alloc.alloc(3), b = *alloc.alloc(3);
  EXPECT_EQ(cache.insert(Ids{1, 2, 3}, a), 0);
  EXPECT_EQ(cache.insert(Ids{1, 2, 4}, b), 2);
  alloc.free(std::span<const int32_t>(b).first(2));  // the caller's duplicates
  {
    RadixLock lock = cache.lock(cache.match_prefix(Ids{1, 2, 3}).last_node);
    EXPECT_EQ(cache.protected_size(), 3);  // [1,2] and [3]
    EXPECT_EQ(cache.evictable_size(), 1);  // [4]
    EXPECT_EQ(lock.node()->lock_ref(), 1);
    EXPECT_EQ(lock.node()->parent()->lock_ref(), 1);
    expect_consistent(cache, alloc, 0);
    {
      // A second lock on the sibling: the shared parent counts both.
      RadixLock sibling = cache.lock(cache.match_prefix(Ids{1, 2, 4}).last_node);
      EXPECT_EQ(lock.node()->parent()->lock_ref(), 2);
      EXPECT_EQ(cache.protected_size(), 4);
      EXPECT_EQ(cache.evictable_size(), 0);
      EXPECT_EQ(cache.evict(100, alloc), 0);
      expect_consistent(cache, alloc, 0);
    }
    EXPECT_EQ(lock.node()->parent()->lock_ref(), 1);
    const int32_t before = alloc.available();
    EXPECT_EQ(cache.evict(100, alloc), 1);  // only [4]
    EXPECT_EQ(alloc.available(), before + 1);
    EXPECT_EQ(cache.match_prefix(Ids{1, 2, 3}).device_indices, a);
    EXPECT_EQ(cache.protected_size(), 3);
    EXPECT_EQ(cache.evictable_size(), 0);
    expect_consistent(cache, alloc, 0);
  }
  EXPECT_EQ(cache.protected_size(), 0);
  EXPECT_EQ(cache.evictable_size(), 3);
  EXPECT_EQ(cache.evict(100, alloc), 3);
  EXPECT_EQ(alloc.available(), alloc.capacity());
  expect_consistent(cache, alloc, 0);
}

TEST(RadixCache, LockOnInnerNodeProtectsItButNotItsChildren) {
  TokenToKvPoolAllocator alloc(16);
  RadixCache cache;
  EXPECT_EQ(cache.insert(Ids{1, 2, 3}, *alloc.alloc(3)), 0);
  RadixLock lock = cache.lock(cache.match_prefix(Ids{1, 2}).last_node);  // splits [1,2 | 3]
  EXPECT_EQ(cache.protected_size(), 2);
  EXPECT_EQ(cache.evictable_size(), 1);
  EXPECT_EQ(cache.evict(100, alloc), 1);  // the child [3] goes; the locked leaf [1,2] stays
  EXPECT_EQ(cache.total_size(), 2);
  expect_consistent(cache, alloc, 0);
  lock.reset();
  EXPECT_EQ(cache.evict(1, alloc), 2);
  expect_consistent(cache, alloc, 0);
}

TEST(RadixCache, RaiiUnlockOnDestructionMoveAndReset) {
  RadixCache cache;
  EXPECT_EQ(cache.insert(Ids{1, 2}, Ids{10, 11}), 0);
  EXPECT_EQ(cache.insert(Ids{5}, Ids{20}), 0);
  TreeNode* n12 = cache.match_prefix(Ids{1, 2}).last_node;
  TreeNode* n5 = cache.match_prefix(Ids{5}).last_node;
  {
    RadixLock lock = cache.lock(n12);
    EXPECT_EQ(n12->lock_ref(), 1);
  }
  EXPECT_EQ(n12->lock_ref(), 0);

  RadixLock a = cache.lock(n12);
  RadixLock b(std::move(a));  // move construction transfers, no double count
  EXPECT_FALSE(a);            // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_TRUE(b);
  EXPECT_EQ(n12->lock_ref(), 1);
  RadixLock c = cache.lock(n5);
  EXPECT_EQ(cache.protected_size(), 3);
  c = std::move(b);  // releases n5, takes over n12
  EXPECT_EQ(n5->lock_ref(), 0);
  EXPECT_EQ(n12->lock_ref(), 1);
  EXPECT_EQ(c.node(), n12);
  EXPECT_EQ(cache.protected_size(), 2);
  EXPECT_TRUE(cache.check_integrity().ok());
  c.reset();
  c.reset();  // idempotent
  EXPECT_EQ(n12->lock_ref(), 0);
  EXPECT_EQ(cache.protected_size(), 0);
  EXPECT_EQ(cache.evictable_size(), 3);
  EXPECT_TRUE(cache.check_integrity().ok());

  RadixLock root_lock = cache.lock(cache.root());  // nothing matched: locks nothing
  EXPECT_EQ(cache.protected_size(), 0);
  EXPECT_TRUE(cache.check_integrity().ok());
}

TEST(RadixCache, EvictsLeastRecentlyUsedLeavesFirst) {
  TokenToKvPoolAllocator alloc(32);
  RadixCache cache;
  EXPECT_EQ(cache.insert(Ids{1, 1}, *alloc.alloc(2)), 0);  // oldest
  EXPECT_EQ(cache.insert(Ids{2, 2}, *alloc.alloc(2)), 0);
  EXPECT_EQ(cache.insert(Ids{3, 3}, *alloc.alloc(2)), 0);
  cache.match_prefix(Ids{1, 1});  // now [2,2] is the least recently used
  EXPECT_EQ(cache.evict(2, alloc), 2);
  EXPECT_TRUE(cache.match_prefix(Ids{2, 2}).device_indices.empty());
  EXPECT_EQ(cache.match_prefix(Ids{3, 3}).device_indices.size(), 2u);  // touches [3,3]
  EXPECT_EQ(cache.evict(1, alloc), 2);                                 // whole leaf [1,1]
  EXPECT_TRUE(cache.match_prefix(Ids{1, 1}).device_indices.empty());
  EXPECT_EQ(cache.total_size(), 2);
  expect_consistent(cache, alloc, 0);
}

TEST(RadixCache, EvictionCascadesToParentsInLruOrder) {
  TokenToKvPoolAllocator alloc(32);
  RadixCache cache;
  Ids s12 = *alloc.alloc(2), s13 = *alloc.alloc(2);
  EXPECT_EQ(cache.insert(Ids{1, 2}, s12), 0);
  EXPECT_EQ(cache.insert(Ids{1, 3}, s13), 1);  // [1] -> {[2], [3]}
  alloc.free(std::span<const int32_t>(s13).first(1));
  EXPECT_EQ(cache.insert(Ids{9}, *alloc.alloc(1)), 0);  // the most recent
  // [2] and [3] go first; their parent [1] then becomes a leaf older than [9] and goes next.
  EXPECT_EQ(cache.evict(3, alloc), 3);
  EXPECT_EQ(cache.root()->num_children(), 1u);
  EXPECT_EQ(cache.match_prefix(Ids{9}).device_indices.size(), 1u);
  EXPECT_TRUE(cache.match_prefix(Ids{1}).device_indices.empty());
  expect_consistent(cache, alloc, 0);
}

TEST(RadixCache, EvictStopsAtLeafGranularity) {
  TokenToKvPoolAllocator alloc(32);
  RadixCache cache;
  Ids s = *alloc.alloc(4);
  EXPECT_EQ(cache.insert(Ids{1, 2, 3}, std::span<const int32_t>(s).first(3)), 0);
  EXPECT_EQ(cache.insert(Ids{1, 2, 4}, Ids{s[0], s[1], s[3]}), 2);
  EXPECT_EQ(cache.evict(2, alloc), 2);  // both leaves, not yet the parent
  EXPECT_EQ(cache.total_size(), 2);
  EXPECT_EQ(cache.evict(0, alloc), 0);
  EXPECT_EQ(cache.evict(-3, alloc), 0);
  expect_consistent(cache, alloc, 0);
}

TEST(RadixCache, EvictMoreThanEvictable) {
  TokenToKvPoolAllocator alloc(32);
  RadixCache cache;
  EXPECT_EQ(cache.insert(Ids{1, 2, 3}, *alloc.alloc(3)), 0);
  EXPECT_EQ(cache.insert(Ids{4, 5}, *alloc.alloc(2)), 0);
  EXPECT_EQ(cache.insert(Ids{6}, *alloc.alloc(1)), 0);
  RadixLock lock = cache.lock(cache.match_prefix(Ids{4, 5}).last_node);
  const int32_t before = alloc.available();
  EXPECT_EQ(cache.evictable_size(), 4);
  EXPECT_EQ(cache.evict(1000, alloc), 4);
  EXPECT_EQ(alloc.available(), before + 4);
  EXPECT_EQ(cache.evictable_size(), 0);
  EXPECT_EQ(cache.protected_size(), 2);
  EXPECT_EQ(cache.evict(1000, alloc), 0);
  expect_consistent(cache, alloc, 0);
}

TEST(RadixCache, ResetFreesEverythingButRefusesWhileLocked) {
  TokenToKvPoolAllocator alloc(32);
  RadixCache cache;
  EXPECT_EQ(cache.insert(Ids{1, 2, 3}, *alloc.alloc(3)), 0);
  EXPECT_EQ(cache.insert(Ids{1, 4}, *alloc.alloc(2)), 1);  // keeps 1 slot outside the tree
  {
    RadixLock lock = cache.lock(cache.match_prefix(Ids{1, 4}).last_node);
    EXPECT_FALSE(cache.reset(alloc));
    EXPECT_EQ(cache.total_size(), 4);
    expect_consistent(cache, alloc, 1);
  }
  RadixLock root_lock = cache.lock(cache.root());  // protects nothing: does not block reset
  EXPECT_TRUE(cache.reset(alloc));
  EXPECT_EQ(cache.total_size(), 0);
  EXPECT_EQ(cache.root()->num_children(), 0u);
  EXPECT_EQ(alloc.available(), alloc.capacity() - 1);
  expect_consistent(cache, alloc, 1);
  EXPECT_TRUE(cache.match_prefix(Ids{1, 2, 3}).device_indices.empty());
  // The cache is usable after a reset.
  EXPECT_EQ(cache.insert(Ids{7}, *alloc.alloc(1)), 0);
  expect_consistent(cache, alloc, 1);
}

TEST(RadixCache, DisabledModeCachesNothingAndFreesSlots) {
  TokenToKvPoolAllocator alloc(32);
  RadixCache cache(/*disabled=*/true);
  EXPECT_TRUE(cache.disabled());
  const Ids tokens = {1, 2, 3, 4};
  Ids slots = *alloc.alloc(4);
  EXPECT_EQ(cache.insert(tokens, slots), 4);  // the caller keeps (frees) every slot
  EXPECT_EQ(cache.total_size(), 0);
  MatchResult m = cache.match_prefix(tokens);
  EXPECT_TRUE(m.device_indices.empty());
  EXPECT_EQ(m.last_node, cache.root());

  // Unfinished: nothing cached, nothing freed, the request keeps its slots and its lock.
  CacheUnfinishedResult r =
      cache.cache_unfinished_req(tokens, slots, cache.lock(m.last_node), alloc);
  EXPECT_EQ(r.kv_slots, slots);
  EXPECT_EQ(r.lock.node(), cache.root());
  EXPECT_EQ(alloc.available(), alloc.capacity() - 4);
  expect_consistent(cache, alloc, 4);

  // Finished: every slot goes back.
  cache.cache_finished_req(tokens, r.kv_slots, std::move(r.lock), alloc);
  EXPECT_EQ(alloc.available(), alloc.capacity());
  EXPECT_EQ(cache.evict(100, alloc), 0);
  EXPECT_TRUE(cache.reset(alloc));
  expect_consistent(cache, alloc, 0);
}

TEST(RadixCache, CacheFinishedReqFreesExactlyTheDuplicateSlots) {
  TokenToKvPoolAllocator alloc(64);  // capacity 63
  RadixCache cache;
  // A and B run concurrently with no cached prefix; B finishes first with the same 3-token head.
  const Ids a_tokens = {1, 2, 3, 4}, b_tokens = {1, 2, 3, 9};
  RadixLock a_lock = cache.lock(cache.match_prefix(a_tokens).last_node);
  RadixLock b_lock = cache.lock(cache.match_prefix(b_tokens).last_node);
  Ids a_slots = *alloc.alloc(4), b_slots = *alloc.alloc(4);
  EXPECT_EQ(alloc.available(), 55);
  cache.cache_finished_req(b_tokens, b_slots, std::move(b_lock), alloc);
  EXPECT_EQ(alloc.available(), 55);  // the tree took all of B's slots
  expect_consistent(cache, alloc, 4);
  cache.cache_finished_req(a_tokens, a_slots, std::move(a_lock), alloc);
  EXPECT_EQ(alloc.available(), 58);  // A's slots for [1,2,3] were duplicates
  EXPECT_EQ(cache.match_prefix(a_tokens).device_indices,
            (Ids{b_slots[0], b_slots[1], b_slots[2], a_slots[3]}));
  EXPECT_EQ(cache.total_size(), 5);
  EXPECT_EQ(cache.protected_size(), 0);
  expect_consistent(cache, alloc, 0);

  // C borrows the cached prefix [1,2,3,4] and computes [5,6] itself: nothing is a duplicate.
  const Ids c_tokens = {1, 2, 3, 4, 5, 6};
  MatchResult m = cache.match_prefix(c_tokens);
  ASSERT_EQ(m.device_indices.size(), 4u);
  RadixLock c_lock = cache.lock(m.last_node);
  EXPECT_EQ(cache.protected_size(), 4);
  Ids c_slots = m.device_indices;
  const Ids c_own = *alloc.alloc(2);
  c_slots.insert(c_slots.end(), c_own.begin(), c_own.end());
  EXPECT_EQ(alloc.available(), 56);
  expect_consistent(cache, alloc, 2);
  cache.cache_finished_req(c_tokens, c_slots, std::move(c_lock), alloc);
  EXPECT_EQ(alloc.available(), 56);
  EXPECT_EQ(cache.total_size(), 7);
  EXPECT_EQ(cache.protected_size(), 0);
  expect_consistent(cache, alloc, 0);
}

TEST(RadixCache, CacheUnfinishedReqMovesLockAndReturnsTreeSlots) {
  TokenToKvPoolAllocator alloc(64);  // capacity 63
  RadixCache cache;
  const Ids b_tokens = {1, 2, 3, 7};
  Ids b_slots = *alloc.alloc(4);
  cache.cache_finished_req(b_tokens, b_slots, cache.lock(cache.root()), alloc);

  // A started before B was cached (no prefix), and has prefilled its first chunk [1,2,3,4].
  RadixLock a_lock = cache.lock(cache.root());
  Ids a_tokens = {1, 2, 3, 4};
  Ids a_slots = *alloc.alloc(4);
  EXPECT_EQ(alloc.available(), 55);
  CacheUnfinishedResult r = cache.cache_unfinished_req(a_tokens, a_slots, std::move(a_lock), alloc);
  EXPECT_EQ(alloc.available(), 58);  // A's slots for [1,2,3] were duplicates of B's
  EXPECT_EQ(r.kv_slots, (Ids{b_slots[0], b_slots[1], b_slots[2], a_slots[3]}));
  ASSERT_TRUE(r.lock);
  EXPECT_EQ(to_ids(r.lock.node()->key()), (Ids{4}));
  EXPECT_EQ(cache.protected_size(), 4);  // the whole of A's sequence so far
  EXPECT_EQ(cache.evictable_size(), 1);  // B's [7]
  expect_consistent(cache, alloc, 0);    // A owns no slot outside the tree now

  // A prefills [5,6] and caches again: no duplicates this time; the lock moves down.
  TreeNode* old_node = r.lock.node();
  a_tokens.insert(a_tokens.end(), {5, 6});
  Ids more = *alloc.alloc(2);
  a_slots = r.kv_slots;
  a_slots.insert(a_slots.end(), more.begin(), more.end());
  expect_consistent(cache, alloc, 2);
  r = cache.cache_unfinished_req(a_tokens, a_slots, std::move(r.lock), alloc);
  EXPECT_EQ(r.kv_slots, a_slots);
  EXPECT_EQ(alloc.available(), 56);
  EXPECT_EQ(old_node->lock_ref(), 1);  // only through its locked descendant
  EXPECT_EQ(to_ids(r.lock.node()->key()), (Ids{5, 6}));
  EXPECT_EQ(cache.protected_size(), 6);
  expect_consistent(cache, alloc, 0);

  // A decodes one more token and finishes.
  a_tokens.push_back(8);
  a_slots = r.kv_slots;
  a_slots.push_back((*alloc.alloc(1))[0]);
  cache.cache_finished_req(a_tokens, a_slots, std::move(r.lock), alloc);
  EXPECT_EQ(alloc.available(), 55);
  EXPECT_EQ(cache.protected_size(), 0);
  EXPECT_EQ(cache.total_size(), 8);
  expect_consistent(cache, alloc, 0);
  EXPECT_TRUE(cache.reset(alloc));
  EXPECT_EQ(alloc.available(), alloc.capacity());
}

TEST(RadixCache, DeepChainOfSplitsStaysConsistent) {
  // Matching every prefix of one long sequence splits it into single-token nodes.
  constexpr int32_t kLen = 2000;
  TokenToKvPoolAllocator alloc(kLen + 1);
  RadixCache cache;
  Ids tokens(kLen);
  for (int32_t i = 0; i < kLen; ++i) tokens[static_cast<size_t>(i)] = i % 7;
  EXPECT_EQ(cache.insert(tokens, *alloc.alloc(kLen)), 0);
  for (size_t k = 1; k < tokens.size(); ++k) {
    ASSERT_EQ(cache.match_prefix(std::span<const int32_t>(tokens).first(k)).device_indices.size(),
              k);
  }
  const TreeNode* deepest = cache.match_prefix(tokens).last_node;
  EXPECT_EQ(deepest->key().size(), 1u);
  expect_consistent(cache, alloc, 0);
  {
    RadixLock lock = cache.lock(cache.match_prefix(tokens).last_node);
    EXPECT_EQ(cache.protected_size(), kLen);
  }
  EXPECT_EQ(cache.evict(1, alloc), 1);  // the deepest leaf only
  EXPECT_TRUE(cache.reset(alloc));      // frees (and destroys) the remaining chain
  EXPECT_EQ(alloc.available(), alloc.capacity());
}

TEST(RadixCache, IntegrityReportsUnconservedSlots) {
  TokenToKvPoolAllocator alloc(16);
  RadixCache cache;
  EXPECT_EQ(cache.insert(Ids{1, 2}, *alloc.alloc(2)), 0);
  Ids leaked = *alloc.alloc(3);
  EXPECT_TRUE(cache.check_integrity(alloc, 3).ok());
  const Status s = cache.check_integrity(alloc, 0);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not conserved"), std::string::npos) << s.to_string();
  // A tree slot beyond a (smaller) allocator's range.
  TokenToKvPoolAllocator small(2);
  EXPECT_FALSE(cache.check_integrity(small, 0).ok());
  EXPECT_TRUE(cache.reset(alloc));
  alloc.free(leaked);
}

TEST(RadixCache, NamespacesShareWithinAndNotAcross) {
  RadixCache cache;
  EXPECT_EQ(cache.insert(Ids{1, 2, 3}, Ids{10, 11, 12}), 0);
  // Namespace "a" holds nothing: no match, and the default root to lock (it pins nothing).
  MatchResult m = cache.match_prefix(Ids{1, 2, 3}, "a");
  EXPECT_TRUE(m.device_indices.empty());
  EXPECT_EQ(m.last_node, cache.root());
  EXPECT_EQ(cache.find_root("a"), nullptr);
  // The same tokens in "a" are not cached there yet: the tree takes all of them.
  EXPECT_EQ(cache.insert(Ids{1, 2, 3}, Ids{20, 21, 22}, "a"), 0);
  ASSERT_NE(cache.find_root("a"), nullptr);
  m = cache.match_prefix(Ids{1, 2, 9}, "a");
  EXPECT_EQ(m.device_indices, (Ids{20, 21}));
  EXPECT_EQ(m.last_node->parent(), cache.find_root("a"));
  EXPECT_EQ(cache.match_prefix(Ids{1, 2, 3}).device_indices, (Ids{10, 11, 12}));
  EXPECT_TRUE(cache.match_prefix(Ids{1, 2, 3}, "b").device_indices.empty());
  // Within a namespace a second insert finds its prefix cached.
  EXPECT_EQ(cache.insert(Ids{1, 2, 3, 4}, Ids{30, 31, 32, 33}, "a"), 3);
  EXPECT_EQ(cache.total_size(), 7);
  ASSERT_EQ(cache.roots().size(), 2u);
  EXPECT_EQ(cache.roots()[0], cache.root());
  EXPECT_EQ(cache.roots()[1]->cache_namespace(), "a");
  EXPECT_NE(cache.debug_string().find("namespace 'a':"), std::string::npos);
  EXPECT_TRUE(cache.check_integrity().ok()) << cache.debug_string();
}

TEST(RadixCache, NamespaceRootLivesWhileItHoldsNodesOrLocks) {
  TokenToKvPoolAllocator alloc(16);
  RadixCache cache;
  const Ids slots = *alloc.alloc(2);
  EXPECT_EQ(cache.insert(Ids{1, 2}, slots, "a"), 0);
  // A request of "a" that matched nothing locks the namespace's root.
  RadixLock root_lock = cache.lock(cache.match_prefix(Ids{9}, "a").last_node);
  EXPECT_EQ(root_lock.node(), cache.find_root("a"));
  EXPECT_EQ(cache.evict(100, alloc), 2);
  EXPECT_EQ(cache.roots().size(), 2u);  // empty, but locked
  expect_consistent(cache, alloc, 0);
  root_lock.reset();
  EXPECT_EQ(cache.roots().size(), 1u);
  expect_consistent(cache, alloc, 0);

  // Evicting a namespace's last node drops its root; so does a reset.
  EXPECT_EQ(cache.insert(Ids{3}, *alloc.alloc(1), "b"), 0);
  EXPECT_EQ(cache.evict(1, alloc), 1);
  EXPECT_EQ(cache.roots().size(), 1u);
  EXPECT_EQ(cache.insert(Ids{4}, *alloc.alloc(1), "c"), 0);
  RadixLock c_root = cache.lock(cache.match_prefix(Ids{7}, "c").last_node);
  EXPECT_EQ(cache.insert(Ids{5}, *alloc.alloc(1), "d"), 0);
  EXPECT_TRUE(cache.reset(alloc));
  ASSERT_EQ(cache.roots().size(), 2u);  // "c" is locked
  EXPECT_EQ(cache.roots()[1]->cache_namespace(), "c");
  c_root.reset();
  EXPECT_EQ(cache.roots().size(), 1u);
  EXPECT_EQ(alloc.available(), alloc.capacity());
  expect_consistent(cache, alloc, 0);
  // An empty key makes no namespace.
  EXPECT_EQ(cache.insert(Ids{}, Ids{}, "e"), 0);
  EXPECT_EQ(cache.find_root("e"), nullptr);
}

TEST(RadixCache, RequestsCacheIntoTheirNamespace) {
  TokenToKvPoolAllocator alloc(32);
  RadixCache cache;
  // A request of "a" matched nothing (lock on the default root), ran, and finished.
  Ids a_slots = *alloc.alloc(3);
  cache.cache_finished_req(Ids{1, 2, 3}, a_slots, cache.lock(cache.root()), alloc, "a");
  EXPECT_EQ(cache.match_prefix(Ids{1, 2, 3}, "a").device_indices, a_slots);
  EXPECT_TRUE(cache.match_prefix(Ids{1, 2, 3}).device_indices.empty());
  // A chunked request of "a" borrowing that prefix caches its next chunk there.
  MatchResult m = cache.match_prefix(Ids{1, 2, 3}, "a");
  Ids kv = m.device_indices;
  const Ids own = *alloc.alloc(2);
  kv.insert(kv.end(), own.begin(), own.end());
  CacheUnfinishedResult r =
      cache.cache_unfinished_req(Ids{1, 2, 3, 4, 5}, kv, cache.lock(m.last_node), alloc, "a");
  EXPECT_EQ(r.kv_slots, kv);
  EXPECT_EQ(cache.match_prefix(Ids{1, 2, 3, 4, 5}, "a").device_indices, kv);
  expect_consistent(cache, alloc, 0);
  r.lock.reset();
  EXPECT_TRUE(cache.reset(alloc));
  EXPECT_EQ(alloc.available(), alloc.capacity());
}

TEST(RadixCacheDeathTest, MisuseIsABug) {
  EXPECT_DEATH(
      {
        RadixCache cache;
        cache.insert(Ids{1, 2}, Ids{10});
      },
      "lengths differ");
  EXPECT_DEATH(
      {
        RadixCache cache;
        cache.insert(Ids{1}, Ids{0});
      },
      "reserved");
  EXPECT_DEATH(
      {
        auto cache = std::make_unique<RadixCache>();
        RadixLock lock = cache->lock(cache->root());
        cache.reset();
      },
      "outstanding");
  EXPECT_DEATH(
      {
        TokenToKvPoolAllocator alloc(16);
        RadixCache cache;
        EXPECT_EQ(cache.insert(Ids{1, 2}, Ids{5, 6}), 0);
        RadixLock lock = cache.lock(cache.match_prefix(Ids{1, 2}).last_node);
        // The request claims other slots for its borrowed prefix.
        cache.cache_finished_req(Ids{1, 2, 3}, Ids{7, 8, 9}, std::move(lock), alloc);
      },
      "not the tree's slots");
  EXPECT_DEATH(
      {
        TokenToKvPoolAllocator alloc(16);
        RadixCache cache;
        cache.cache_finished_req(Ids{1}, Ids{1}, RadixLock(), alloc);
      },
      "holds no lock");
  EXPECT_DEATH(
      {
        TokenToKvPoolAllocator alloc(16);
        RadixCache cache;
        EXPECT_EQ(cache.insert(Ids{1, 2}, Ids{5, 6}, "a"), 0);
        RadixLock lock = cache.lock(cache.match_prefix(Ids{1, 2}, "a").last_node);
        // The request borrowed "a"'s prefix but says it belongs to "b".
        cache.cache_finished_req(Ids{1, 2, 3}, Ids{5, 6, 7}, std::move(lock), alloc, "b");
      },
      "namespace 'a', not 'b'");
}

// A simulated request: its tokens, its req_to_token row (kv), the lock on its cached prefix,
// and how many leading slots are borrowed from the tree (the rest it owns).
struct SimReq {
  Ids tokens;
  Ids kv;
  RadixLock lock;
  size_t prefix_len = 0;
  std::string ns;  // its cache namespace
};

// The slots of namespace `ns`'s tree (none where it holds nothing).
std::unordered_set<int32_t> namespace_slots(const RadixCache& cache, const std::string& ns) {
  std::unordered_set<int32_t> slots;
  const TreeNode* root = cache.find_root(ns);
  std::vector<const TreeNode*> stack;
  if (root != nullptr) stack.push_back(root);
  while (!stack.empty()) {
    const TreeNode* n = stack.back();
    stack.pop_back();
    slots.insert(n->value().begin(), n->value().end());
    n->for_each_child([&](const TreeNode* c) { stack.push_back(c); });
  }
  return slots;
}

struct FuzzStats {
  int64_t started = 0, hits = 0, evicted = 0, finished = 0, unfinished = 0, resets_ok = 0,
          resets_refused = 0, duplicates_freed = 0, namespaces_seen = 0;
};

// `namespaces`: requests and raw inserts each in one of three namespaces (the default among them).
FuzzStats run_fuzz(uint32_t seed, int steps, bool namespaces = false) {
  std::mt19937 rng(seed);
  auto uniform = [&](uint32_t n) { return static_cast<int32_t>(rng() % n); };
  auto random_tokens = [&](int32_t min_len, int32_t max_len) {
    Ids t(static_cast<size_t>(min_len + uniform(max_len - min_len + 1)));
    for (int32_t& x : t) x = uniform(3);  // tiny alphabet: prefixes collide constantly
    return t;
  };

  TokenToKvPoolAllocator alloc(49);  // 48 slots: eviction pressure all the time
  RadixCache cache;
  std::vector<SimReq> reqs;
  FuzzStats stats;

  auto held_outside = [&] {
    int64_t n = 0;
    for (const SimReq& r : reqs) n += static_cast<int64_t>(r.kv.size() - r.prefix_len);
    return n;
  };
  // Allocates `n` slots, evicting as SGLang's scheduler does when short; nullopt when even that
  // is not enough.
  auto alloc_slots = [&](int32_t n) -> std::optional<Ids> {
    if (alloc.available() < n) stats.evicted += cache.evict(n - alloc.available(), alloc);
    return alloc.alloc(n);
  };
  auto erase_req = [&](size_t i) { reqs.erase(reqs.begin() + static_cast<std::ptrdiff_t>(i)); };
  auto random_namespace = [&]() -> std::string {
    if (!namespaces) return "";
    static const char* kNames[] = {"", "tenant-a", "tenant-b"};
    return kNames[uniform(3)];
  };

  for (int step = 0; step < steps; ++step) {
    const int32_t op = uniform(100);
    if (op < 22 || reqs.empty()) {
      if (reqs.size() >= 6) continue;
      // New request: sometimes extends another request's tokens so long prefixes hit.
      Ids tokens = random_tokens(1, 10);
      if (!reqs.empty() && uniform(2) == 0) {
        const Ids& other = reqs[static_cast<size_t>(uniform(reqs.size()))].tokens;
        Ids head(other.begin(), other.begin() + uniform(other.size() + 1));
        tokens.insert(tokens.begin(), head.begin(), head.end());
      }
      const std::string ns = random_namespace();
      MatchResult m = cache.match_prefix(tokens, ns);
      if (!(m.device_indices.size() <= tokens.size())) {
        ADD_FAILURE() << "matched more than the key";
        return stats;
      }
      stats.hits += m.device_indices.empty() ? 0 : 1;
      SimReq r{tokens, m.device_indices, cache.lock(m.last_node), m.device_indices.size(), ns};
      if (auto own = alloc_slots(static_cast<int32_t>(tokens.size() - r.prefix_len))) {
        r.kv.insert(r.kv.end(), own->begin(), own->end());
        reqs.push_back(std::move(r));
        ++stats.started;
      }  // else: not admitted; its lock is released here
    } else if (op < 42) {
      // Decode / next chunk: the request computes more tokens in slots of its own.
      SimReq& r = reqs[static_cast<size_t>(uniform(reqs.size()))];
      if (r.tokens.size() > 24) continue;
      const Ids more = random_tokens(1, 4);
      if (auto own = alloc_slots(static_cast<int32_t>(more.size()))) {
        r.tokens.insert(r.tokens.end(), more.begin(), more.end());
        r.kv.insert(r.kv.end(), own->begin(), own->end());
      }
    } else if (op < 55) {
      SimReq& r = reqs[static_cast<size_t>(uniform(reqs.size()))];
      const int32_t before = alloc.available();
      CacheUnfinishedResult res =
          cache.cache_unfinished_req(r.tokens, r.kv, std::move(r.lock), alloc, r.ns);
      stats.duplicates_freed += alloc.available() - before;
      if (res.kv_slots.size() != r.tokens.size()) {
        ADD_FAILURE() << "cache_unfinished_req returned " << res.kv_slots.size() << " slots";
        return stats;
      }
      r.kv = std::move(res.kv_slots);
      r.lock = std::move(res.lock);
      r.prefix_len = r.tokens.size();
      ++stats.unfinished;
    } else if (op < 70) {
      const size_t i = static_cast<size_t>(uniform(reqs.size()));
      SimReq& r = reqs[i];
      const int32_t before = alloc.available();
      cache.cache_finished_req(r.tokens, r.kv, std::move(r.lock), alloc, r.ns);
      stats.duplicates_freed += alloc.available() - before;
      erase_req(i);
      ++stats.finished;
    } else if (op < 75) {
      // Abort without caching: the request frees its own slots and drops its lock.
      const size_t i = static_cast<size_t>(uniform(reqs.size()));
      alloc.free(std::span<const int32_t>(reqs[i].kv).subspan(reqs[i].prefix_len));
      erase_req(i);
    } else if (op < 85) {
      const int64_t want = uniform(20);
      const int64_t evictable = cache.evictable_size();
      const int64_t protected_before = cache.protected_size();
      const int32_t free_before = alloc.available();
      const int64_t got = cache.evict(want, alloc);
      stats.evicted += got;
      EXPECT_GE(got, std::min(want, evictable));
      EXPECT_EQ(got, evictable - cache.evictable_size());
      EXPECT_EQ(cache.protected_size(), protected_before);
      EXPECT_EQ(alloc.available(), free_before + got);
      if (want >= evictable) EXPECT_EQ(cache.evictable_size(), 0);
    } else if (op < 88) {
      bool any_locked = false;
      for (const SimReq& r : reqs) any_locked |= !r.lock.node()->is_root();
      const int64_t total = cache.total_size();
      const int32_t free_before = alloc.available();
      const bool ok = cache.reset(alloc);
      EXPECT_EQ(ok, !any_locked);
      if (ok) {
        EXPECT_EQ(cache.total_size(), 0);
        EXPECT_EQ(alloc.available(), free_before + total);
        ++stats.resets_ok;
      } else {
        EXPECT_EQ(cache.total_size(), total);
        ++stats.resets_refused;
      }
    } else if (op < 96) {
      // A running request's borrowed prefix is still cached with the same slots, in its
      // namespace; in another, what matches is that namespace's own.
      const SimReq& r = reqs[static_cast<size_t>(uniform(reqs.size()))];
      const MatchResult m = cache.match_prefix(r.tokens, r.ns);
      EXPECT_GE(m.device_indices.size(), r.prefix_len);
      EXPECT_TRUE(std::equal(r.kv.begin(),
                             r.kv.begin() + static_cast<std::ptrdiff_t>(
                                                std::min(r.prefix_len, m.device_indices.size())),
                             m.device_indices.begin()));
      const std::string other = random_namespace();
      const MatchResult elsewhere = cache.match_prefix(r.tokens, other);
      const std::unordered_set<int32_t> own = namespace_slots(cache, other);
      for (int32_t slot : elsewhere.device_indices) {
        EXPECT_TRUE(own.count(slot)) << "slot " << slot << " matched outside its namespace";
      }
      stats.namespaces_seen =
          std::max<int64_t>(stats.namespaces_seen, static_cast<int64_t>(cache.roots().size()));
    } else {
      // A raw insert by some other owner, who frees the part that was already cached.
      const Ids key = random_tokens(1, 8);
      if (auto slots = alloc_slots(static_cast<int32_t>(key.size()))) {
        const int64_t cached = cache.insert(key, *slots, random_namespace());
        alloc.free(std::span<const int32_t>(*slots).first(static_cast<size_t>(cached)));
      }
    }

    const Status s = cache.check_integrity(alloc, held_outside());
    if (!s.ok()) {
      ADD_FAILURE() << "seed " << seed << " step " << step << " op " << op << ": " << s.to_string()
                    << "\n"
                    << cache.debug_string();
      return stats;
    }
    const Status a = alloc.check_integrity();
    if (!a.ok()) {
      ADD_FAILURE() << "seed " << seed << " step " << step << ": " << a.to_string();
      return stats;
    }
    if (::testing::Test::HasFailure()) return stats;
  }

  // Drain: finish everything, then the whole pool must come back.
  while (!reqs.empty()) {
    SimReq& r = reqs.back();
    cache.cache_finished_req(r.tokens, r.kv, std::move(r.lock), alloc, r.ns);
    reqs.pop_back();
    EXPECT_TRUE(cache.check_integrity(alloc, held_outside()).ok());
  }
  EXPECT_EQ(cache.protected_size(), 0);
  EXPECT_TRUE(cache.reset(alloc));
  EXPECT_EQ(alloc.available(), alloc.capacity());
  EXPECT_EQ(cache.roots().size(), 1u) << "an empty namespace's root was kept";
  return stats;
}

TEST(RadixCache, RandomizedOperationsKeepIntegrityAndConserveSlots) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    const FuzzStats stats = run_fuzz(seed, 4000);
    ASSERT_FALSE(::testing::Test::HasFailure()) << "seed " << seed;
    // The run exercised what it is meant to.
    EXPECT_GT(stats.started, 200) << "seed " << seed;
    EXPECT_GT(stats.hits, 100) << "seed " << seed;
    EXPECT_GT(stats.evicted, 100) << "seed " << seed;
    EXPECT_GT(stats.finished, 100) << "seed " << seed;
    EXPECT_GT(stats.unfinished, 100) << "seed " << seed;
    EXPECT_GT(stats.duplicates_freed, 10) << "seed " << seed;
    EXPECT_GT(stats.resets_ok, 0) << "seed " << seed;
    EXPECT_GT(stats.resets_refused, 0) << "seed " << seed;
  }
}

TEST(RadixCache, RandomizedOperationsOverNamespacesKeepThemApart) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    const FuzzStats stats = run_fuzz(seed, 4000, /*namespaces=*/true);
    ASSERT_FALSE(::testing::Test::HasFailure()) << "seed " << seed;
    EXPECT_GT(stats.hits, 50) << "seed " << seed;
    EXPECT_GT(stats.evicted, 100) << "seed " << seed;
    EXPECT_GT(stats.resets_ok, 0) << "seed " << seed;
    EXPECT_EQ(stats.namespaces_seen, 3) << "seed " << seed;
  }
}

TEST(RadixCache, RandomizedRunIsDeterministic) {
  const FuzzStats a = run_fuzz(7, 1500);
  const FuzzStats b = run_fuzz(7, 1500);
  EXPECT_EQ(a.started, b.started);
  EXPECT_EQ(a.hits, b.hits);
  EXPECT_EQ(a.evicted, b.evicted);
  EXPECT_EQ(a.duplicates_freed, b.duplicates_freed);
}

}  // namespace
}  // namespace sgl::cache
