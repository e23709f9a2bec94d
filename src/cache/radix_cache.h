// RadixCache: token-level radix tree of cached KV slots (SGLang's radix_cache.py, page size 1).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/token_to_kv_pool_allocator.h"
#include "core/status.h"

namespace sgl::cache {

class RadixCache;

// One edge of the tree: a run of tokens and the KV slots holding their keys/values.
// Owned by its parent (children_ holds unique_ptrs); the root is owned by the RadixCache.
// Read-only outside RadixCache: the tree's invariants are maintained only by the cache.
class TreeNode {
 public:
  TreeNode() = default;
  ~TreeNode();
  TreeNode(const TreeNode&) = delete;
  TreeNode& operator=(const TreeNode&) = delete;

  std::span<const int32_t> key() const { return key_; }
  std::span<const int32_t> value() const { return value_; }
  const TreeNode* parent() const { return parent_; }
  // Number of locks held on this node or any node below it; 0 = evictable. A root counts every
  // lock in its tree, its own included (a namespace's root lives while it has locks or nodes).
  int32_t lock_ref() const { return lock_ref_; }
  // Logical clock value of the last match_prefix / insert that walked through this node.
  uint64_t last_access_time() const { return last_access_time_; }
  size_t num_children() const { return children_.size(); }
  // Calls fn(const TreeNode*) for each child, in unspecified order.
  template <typename Fn>
  void for_each_child(Fn&& fn) const {
    for (const auto& [first_token, child] : children_)
      fn(static_cast<const TreeNode*>(child.get()));
  }
  bool is_root() const { return parent_ == nullptr; }
  // A root's namespace ("" for the default one); empty below the roots.
  const std::string& cache_namespace() const { return namespace_; }

 private:
  friend class RadixCache;

  std::vector<int32_t> key_;    // token ids, i32 [n]; empty only for the root
  std::vector<int32_t> value_;  // KV slots, i32 [n]; value_[i] holds the KV of key_[i]
  TreeNode* parent_ = nullptr;  // borrowed; nullptr only for the root
  // Children keyed by the first token of their key (distinct first tokens: it is a radix tree).
  std::unordered_map<int32_t, std::unique_ptr<TreeNode>> children_;
  int32_t lock_ref_ = 0;
  uint64_t last_access_time_ = 0;
  uint64_t id_ = 0;        // creation order; breaks LRU ties deterministically
  std::string namespace_;  // roots only
};

// A held lock_ref on a node (and so on all its ancestors): the node's slots cannot be evicted
// while the lock lives. Move-only; releases on destruction or reset(). Must not outlive the
// RadixCache that issued it (the cache aborts if destroyed with locks outstanding).
class RadixLock {
 public:
  RadixLock() = default;
  ~RadixLock() { reset(); }
  RadixLock(RadixLock&& other) noexcept;
  RadixLock& operator=(RadixLock&& other) noexcept;
  RadixLock(const RadixLock&) = delete;
  RadixLock& operator=(const RadixLock&) = delete;

  // Releases the lock (dec_lock_ref); no-op when empty.
  void reset();
  TreeNode* node() const { return node_; }
  explicit operator bool() const { return node_ != nullptr; }

 private:
  friend class RadixCache;
  RadixLock(RadixCache* cache, TreeNode* node) : cache_(cache), node_(node) {}

  RadixCache* cache_ = nullptr;  // borrowed
  TreeNode* node_ = nullptr;     // borrowed; kept alive by the lock itself
};

struct MatchResult {
  std::vector<int32_t> device_indices;  // KV slots of the matched prefix, i32 [matched_len]
  // Node ending the match; a root if nothing matched (the default root where the namespace holds
  // nothing yet: locking a root pins no slots).
  TreeNode* last_node = nullptr;
};

struct CacheUnfinishedResult {
  // The request's slots for its token_ids after caching, i32 [token_ids.size()]: all of them are
  // now the tree's. The caller must write them into its req_to_token row (some changed).
  std::vector<int32_t> kv_slots;
  RadixLock lock;  // lock on the node ending token_ids; replaces the request's old lock
};

// Ownership of KV slots (who frees what):
//  - Slots in the tree belong to the tree. They return to the allocator only through evict()
//    or reset(). A running request borrows the tree's slots of its matched prefix and holds a
//    RadixLock so they cannot be evicted under it.
//  - Slots a request allocated itself (beyond its matched prefix) belong to the request until it
//    hands them over with cache_finished_req / cache_unfinished_req (or frees them itself).
//  - insert(key, value) takes ownership of value[r:] where r is its return value; value[:r]
//    stays with the caller (those positions were already cached with the tree's own slots).
//  - Destroying the cache does not return its slots to the allocator; call reset() first when
//    the allocator outlives it.
// Namespaces (SGLang's extra_key / cache_salt, one string here): requests share cached prefixes
// only within one. Each namespace is a tree of its own under its own root; "" is the default,
// whose root always exists. Another namespace's root is made by the first insert into it and
// dropped once it holds no node and no lock. Eviction is LRU over every namespace's leaves.
// Not thread-safe: used from the engine thread only.
class RadixCache {
 public:
  // `disabled` is --disable-radix-cache (SGLang's ChunkCache behaviour): nothing is ever cached,
  // match_prefix finds nothing and cache_finished_req frees all the request's slots.
  explicit RadixCache(bool disabled = false);
  ~RadixCache();
  RadixCache(const RadixCache&) = delete;
  RadixCache& operator=(const RadixCache&) = delete;
  RadixCache(RadixCache&&) = delete;  // locks point at the cache
  RadixCache& operator=(RadixCache&&) = delete;

  // Longest cached prefix of `key` in namespace `ns`. Splits the node where the match ends inside
  // it (so that last_node ends exactly at the match) and refreshes the access time along the path.
  MatchResult match_prefix(std::span<const int32_t> key, std::string_view ns = {});

  // Inserts key -> value (equal lengths, slots > 0) into namespace `ns`. Returns the length r of
  // the prefix that was already in the tree: the tree keeps its own slots there, takes ownership
  // of value[r:], and the caller keeps (usually frees) value[:r]. NOTE: when disabled nothing is
  // stored and key.size() is returned, so the caller keeps (frees) every slot.
  int64_t insert(std::span<const int32_t> key, std::span<const int32_t> value,
                 std::string_view ns = {});

  // inc_lock_ref on `node` and all its ancestors; released by the returned handle.
  RadixLock lock(TreeNode* node);

  // A request of namespace `ns` finished. token_ids / kv_slots: its whole cached sequence, equal
  // lengths, where kv_slots[:p] are the tree's slots it borrowed (p = length of the path to
  // lock.node(), a node of `ns` or a root) and kv_slots[p:] are its own. Inserts the sequence;
  // frees to `allocator` the request's own slots whose positions were meanwhile cached by someone
  // else (kv_slots[p:r], r = insert's result); the tree takes kv_slots[r:]; releases `lock`.
  // Afterwards the request owns no slots.
  void cache_finished_req(std::span<const int32_t> token_ids, std::span<const int32_t> kv_slots,
                          RadixLock lock, TokenToKvPoolAllocator& allocator,
                          std::string_view ns = {});

  // A request is still running (chunked prefill): caches its sequence so far, as above (frees the
  // duplicates kv_slots[p:r], the tree takes kv_slots[r:]), then re-matches so all of token_ids
  // point at the tree's slots, and moves the lock from lock.node() to the new last node.
  // Afterwards the request owns no slots of token_ids (it borrows them all under the new lock).
  // Disabled: nothing is cached or freed; returns kv_slots and `lock` unchanged.
  CacheUnfinishedResult cache_unfinished_req(std::span<const int32_t> token_ids,
                                             std::span<const int32_t> kv_slots, RadixLock lock,
                                             TokenToKvPoolAllocator& allocator,
                                             std::string_view ns = {});

  // Evicts unlocked leaves, least recently used first (ties: older node first), cascading to
  // parents that become unlocked leaves, until at least `num_tokens` tokens are evicted or none
  // is evictable. Frees their slots to `allocator`. Returns the number of tokens evicted (it may
  // exceed num_tokens: leaves go whole).
  int64_t evict(int64_t num_tokens, TokenToKvPoolAllocator& allocator);

  // flush_cache: frees every cached slot to `allocator` and empties every namespace's tree.
  // Refuses (returns false, changes nothing) while any non-root node is locked.
  bool reset(TokenToKvPoolAllocator& allocator);

  int64_t evictable_size() const { return evictable_size_; }  // tokens in unlocked nodes
  int64_t protected_size() const { return protected_size_; }  // tokens in locked nodes
  int64_t total_size() const { return evictable_size_ + protected_size_; }
  bool disabled() const { return disabled_; }
  // The default namespace's root.
  TreeNode* root() { return root_.get(); }
  // Namespace `ns`'s root; nullptr where it holds nothing (another than the default).
  const TreeNode* find_root(std::string_view ns) const;
  // Every root: the default's first, then the other namespaces' in name order.
  std::vector<const TreeNode*> roots() const;

  // Structural invariants: key/value lengths equal and non-empty below the roots, children keyed
  // by their first token with correct parent links, lock_ref >= 0 and lock_ref(node) >= the sum
  // of its children's (the excess being the locks held on the node itself, which add up to the
  // locks outstanding), access times non-increasing downwards, evictable/protected sizes equal
  // to the tokens in unlocked/locked nodes, every slot > 0 and held by one node only, and no
  // namespace root other than the default's without a node or a lock.
  Status check_integrity() const;
  // The above plus slot conservation: allocator free slots + tree slots + slots held by running
  // requests outside the tree == allocator capacity, and every tree slot inside the allocator.
  Status check_integrity(const TokenToKvPoolAllocator& allocator,
                         int64_t slots_held_outside_tree) const;

  // The tree, one node per line, children in token order (for test failure messages).
  std::string debug_string() const;

 private:
  friend class RadixLock;

  void inc_lock_ref(TreeNode* node);
  void dec_lock_ref(TreeNode* node);
  // Namespace `ns`'s root; nullptr where it holds nothing. With `make`, made where missing.
  TreeNode* namespace_root(std::string_view ns, bool make);
  // Drops `root` if it is another namespace's than the default and holds no node and no lock.
  void drop_if_unused(TreeNode* root);
  // Every root, in roots()' order.
  std::vector<TreeNode*> all_roots() const;
  // Splits `child` after its first `split_len` tokens (0 < split_len < key size): a new node
  // takes that head and becomes `child`'s parent. Returns the new node. `child` keeps its
  // identity (its locks and the RadixLocks pointing at it stay valid).
  TreeNode* split_node(TreeNode* child, size_t split_len);
  // Length of the path to lock.node(); checks the lock is ours, on a root or in namespace `ns`,
  // and that kv_slots starts with the slots on that path.
  int64_t locked_prefix_length(const RadixLock& lock, std::span<const int32_t> kv_slots,
                               std::string_view ns) const;
  uint64_t tick() { return ++clock_; }

  bool disabled_;
  std::unique_ptr<TreeNode> root_;  // the default namespace's
  // The other namespaces' roots, by name (ordered: deterministic walks).
  std::map<std::string, std::unique_ptr<TreeNode>, std::less<>> namespace_roots_;
  int64_t evictable_size_ = 0;
  int64_t protected_size_ = 0;
  int64_t num_locks_ = 0;       // outstanding RadixLocks, those on roots included
  int64_t num_node_locks_ = 0;  // outstanding RadixLocks on non-root nodes
  uint64_t clock_ = 0;          // logical clock: one tick per match_prefix / insert
  uint64_t next_node_id_ = 1;
};

}  // namespace sgl::cache
