// RadixCache: match, insert, split, lock, LRU eviction and integrity checks.
#include "cache/radix_cache.h"

#include <algorithm>
#include <queue>
#include <sstream>
#include <string>
#include <unordered_set>
#include <utility>

#include "core/check.h"

namespace sgl::cache {
namespace {

size_t common_prefix_length(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

std::string join(std::span<const int32_t> values) {
  std::ostringstream os;
  for (size_t i = 0; i < values.size(); ++i) os << (i ? "," : "") << values[i];
  return os.str();
}

}  // namespace

TreeNode::~TreeNode() {
  // NOTE: iterative, not unique_ptr's recursion: a chain of short nodes can be as deep as the
  // context length. Each descendant is destroyed with its children already taken.
  std::vector<std::unique_ptr<TreeNode>> work;
  for (auto& [token, child] : children_) work.push_back(std::move(child));
  children_.clear();
  while (!work.empty()) {
    std::unique_ptr<TreeNode> n = std::move(work.back());
    work.pop_back();
    for (auto& [token, child] : n->children_) work.push_back(std::move(child));
    n->children_.clear();
  }
}

RadixLock::RadixLock(RadixLock&& other) noexcept
    : cache_(std::exchange(other.cache_, nullptr)), node_(std::exchange(other.node_, nullptr)) {}

RadixLock& RadixLock::operator=(RadixLock&& other) noexcept {
  if (this != &other) {
    reset();
    cache_ = std::exchange(other.cache_, nullptr);
    node_ = std::exchange(other.node_, nullptr);
  }
  return *this;
}

void RadixLock::reset() {
  if (node_ == nullptr) return;
  cache_->dec_lock_ref(node_);
  cache_ = nullptr;
  node_ = nullptr;
}

RadixCache::RadixCache(bool disabled) : disabled_(disabled), root_(std::make_unique<TreeNode>()) {
  root_->id_ = next_node_id_++;
}

RadixCache::~RadixCache() {
  SGL_CHECK_EQ(num_locks_, 0) << "RadixCache destroyed while RadixLocks are outstanding";
}

const TreeNode* RadixCache::find_root(std::string_view ns) const {
  if (ns.empty()) return root_.get();
  const auto it = namespace_roots_.find(ns);
  return it == namespace_roots_.end() ? nullptr : it->second.get();
}

TreeNode* RadixCache::namespace_root(std::string_view ns, bool make) {
  if (ns.empty()) return root_.get();
  auto it = namespace_roots_.find(ns);
  if (it != namespace_roots_.end()) return it->second.get();
  if (!make) return nullptr;
  auto root = std::make_unique<TreeNode>();
  root->id_ = next_node_id_++;
  root->namespace_ = std::string(ns);
  return namespace_roots_.emplace(std::string(ns), std::move(root)).first->second.get();
}

void RadixCache::drop_if_unused(TreeNode* root) {
  if (root == root_.get() || !root->children_.empty() || root->lock_ref_ > 0) return;
  namespace_roots_.erase(namespace_roots_.find(root->namespace_));
}

std::vector<TreeNode*> RadixCache::all_roots() const {
  std::vector<TreeNode*> roots = {root_.get()};
  for (const auto& [name, root] : namespace_roots_) roots.push_back(root.get());
  return roots;
}

std::vector<const TreeNode*> RadixCache::roots() const {
  const std::vector<TreeNode*> all = all_roots();
  return {all.begin(), all.end()};
}

MatchResult RadixCache::match_prefix(std::span<const int32_t> key, std::string_view ns) {
  TreeNode* root = namespace_root(ns, /*make=*/false);
  MatchResult result{{}, root != nullptr ? root : root_.get()};
  if (disabled_ || key.empty() || root == nullptr) return result;
  const uint64_t now = tick();
  TreeNode* node = root;
  node->last_access_time_ = now;
  result.device_indices.reserve(std::min<size_t>(key.size(), total_size()));
  size_t pos = 0;
  while (pos < key.size()) {
    auto it = node->children_.find(key[pos]);
    if (it == node->children_.end()) break;
    TreeNode* child = it->second.get();
    child->last_access_time_ = now;
    const size_t n = common_prefix_length(child->key_, key.subspan(pos));
    if (n < child->key_.size()) {
      node = split_node(child, n);
      result.device_indices.insert(result.device_indices.end(), node->value_.begin(),
                                   node->value_.end());
      break;
    }
    result.device_indices.insert(result.device_indices.end(), child->value_.begin(),
                                 child->value_.end());
    node = child;
    pos += n;
  }
  result.last_node = node;
  return result;
}

int64_t RadixCache::insert(std::span<const int32_t> key, std::span<const int32_t> value,
                           std::string_view ns) {
  SGL_CHECK_EQ(key.size(), value.size()) << "insert: key and value lengths differ";
  if (disabled_) return static_cast<int64_t>(key.size());
  TreeNode* node = namespace_root(ns, /*make=*/!key.empty());
  if (node == nullptr) return 0;  // an empty key into a namespace that holds nothing
  const uint64_t now = tick();
  node->last_access_time_ = now;
  size_t pos = 0;
  while (pos < key.size()) {
    auto it = node->children_.find(key[pos]);
    if (it == node->children_.end()) break;
    TreeNode* child = it->second.get();
    child->last_access_time_ = now;
    const size_t n = common_prefix_length(child->key_, key.subspan(pos));
    pos += n;
    if (n < child->key_.size()) {
      // The rest of `key` (if any) diverges inside `child`: it hangs off the split point.
      node = split_node(child, n);
      break;
    }
    node = child;
  }
  if (pos < key.size()) {
    auto leaf = std::make_unique<TreeNode>();
    leaf->key_.assign(key.begin() + pos, key.end());
    leaf->value_.assign(value.begin() + pos, value.end());
    for (int32_t slot : leaf->value_) SGL_CHECK_GT(slot, 0) << "insert: KV slot 0 is reserved";
    leaf->parent_ = node;
    leaf->last_access_time_ = now;
    leaf->id_ = next_node_id_++;
    evictable_size_ += static_cast<int64_t>(leaf->value_.size());
    node->children_.emplace(key[pos], std::move(leaf));
  }
  return static_cast<int64_t>(pos);
}

TreeNode* RadixCache::split_node(TreeNode* child, size_t split_len) {
  SGL_CHECK(split_len > 0 && split_len < child->key_.size()) << "split at " << split_len;
  TreeNode* parent = child->parent_;
  auto head = std::make_unique<TreeNode>();
  head->key_.assign(child->key_.begin(), child->key_.begin() + split_len);
  head->value_.assign(child->value_.begin(), child->value_.begin() + split_len);
  head->parent_ = parent;
  // Locks at or below `child` are at or below `head`; the sizes do not move between
  // evictable and protected because both halves share the lock_ref.
  head->lock_ref_ = child->lock_ref_;
  head->last_access_time_ = child->last_access_time_;
  head->id_ = next_node_id_++;
  child->key_.erase(child->key_.begin(), child->key_.begin() + split_len);
  child->value_.erase(child->value_.begin(), child->value_.begin() + split_len);
  child->parent_ = head.get();
  std::unique_ptr<TreeNode>& slot = parent->children_.at(head->key_[0]);  // owns `child`
  head->children_.emplace(child->key_[0], std::move(slot));
  slot = std::move(head);
  return slot.get();
}

RadixLock RadixCache::lock(TreeNode* node) {
  inc_lock_ref(node);
  return RadixLock(this, node);
}

void RadixCache::inc_lock_ref(TreeNode* node) {
  SGL_CHECK(node != nullptr) << "locking a null node";
  const bool on_root = node->parent_ == nullptr;
  while (node->parent_ != nullptr) {
    if (node->lock_ref_ == 0) {
      const auto n = static_cast<int64_t>(node->key_.size());
      evictable_size_ -= n;
      protected_size_ += n;
    }
    ++node->lock_ref_;
    node = node->parent_;
  }
  SGL_CHECK(node == find_root(node->namespace_)) << "locking a node of another RadixCache";
  ++node->lock_ref_;
  ++num_locks_;
  if (!on_root) ++num_node_locks_;
}

void RadixCache::dec_lock_ref(TreeNode* node) {
  SGL_CHECK_GT(num_locks_, 0) << "unlocking with no lock outstanding";
  --num_locks_;
  if (node->parent_ != nullptr) --num_node_locks_;
  while (node->parent_ != nullptr) {
    SGL_CHECK_GT(node->lock_ref_, 0) << "unlocking a node below zero";
    if (node->lock_ref_ == 1) {
      const auto n = static_cast<int64_t>(node->key_.size());
      protected_size_ -= n;
      evictable_size_ += n;
    }
    --node->lock_ref_;
    node = node->parent_;
  }
  SGL_CHECK_GT(node->lock_ref_, 0) << "unlocking a root below zero";
  --node->lock_ref_;
  drop_if_unused(node);
}

int64_t RadixCache::locked_prefix_length(const RadixLock& lock, std::span<const int32_t> kv_slots,
                                         std::string_view ns) const {
  SGL_CHECK(lock.node_ != nullptr) << "the request holds no lock (moved-from RadixLock?)";
  SGL_CHECK(lock.cache_ == this) << "the request's lock belongs to another RadixCache";
  int64_t depth = 0;
  const TreeNode* root = lock.node_;
  for (; root->parent_ != nullptr; root = root->parent_) {
    depth += static_cast<int64_t>(root->value_.size());
  }
  SGL_CHECK(depth == 0 || root == find_root(ns))
      << "the request's lock is in namespace '" << root->namespace_ << "', not '" << ns << "'";
  SGL_CHECK_LE(depth, static_cast<int64_t>(kv_slots.size()))
      << "the locked prefix is longer than the request's slots";
  int64_t end = depth;
  for (const TreeNode* n = lock.node_; n != nullptr; n = n->parent_) {
    const auto len = static_cast<int64_t>(n->value_.size());
    SGL_CHECK(std::equal(n->value_.begin(), n->value_.end(), kv_slots.begin() + (end - len)))
        << "the request's prefix slots are not the tree's slots of its locked node";
    end -= len;
  }
  return depth;
}

void RadixCache::cache_finished_req(std::span<const int32_t> token_ids,
                                    std::span<const int32_t> kv_slots, RadixLock lock,
                                    TokenToKvPoolAllocator& allocator, std::string_view ns) {
  SGL_CHECK_EQ(token_ids.size(), kv_slots.size());
  const int64_t prefix_len = locked_prefix_length(lock, kv_slots, ns);
  const int64_t cached_len = insert(token_ids, kv_slots, ns);
  SGL_CHECK_GE(cached_len, prefix_len) << "token_ids do not start with the locked prefix";
  allocator.free(kv_slots.subspan(prefix_len, cached_len - prefix_len));
  // `lock` is released on return.
}

CacheUnfinishedResult RadixCache::cache_unfinished_req(std::span<const int32_t> token_ids,
                                                       std::span<const int32_t> kv_slots,
                                                       RadixLock lock,
                                                       TokenToKvPoolAllocator& allocator,
                                                       std::string_view ns) {
  SGL_CHECK_EQ(token_ids.size(), kv_slots.size());
  const int64_t prefix_len = locked_prefix_length(lock, kv_slots, ns);
  if (disabled_) return {std::vector<int32_t>(kv_slots.begin(), kv_slots.end()), std::move(lock)};
  const int64_t cached_len = insert(token_ids, kv_slots, ns);
  SGL_CHECK_GE(cached_len, prefix_len) << "token_ids do not start with the locked prefix";
  allocator.free(kv_slots.subspan(prefix_len, cached_len - prefix_len));
  MatchResult match = match_prefix(token_ids, ns);
  SGL_CHECK_EQ(match.device_indices.size(), token_ids.size());
  RadixLock new_lock = this->lock(match.last_node);
  // The old `lock` is released on return, after the new one is held.
  return {std::move(match.device_indices), std::move(new_lock)};
}

int64_t RadixCache::evict(int64_t num_tokens, TokenToKvPoolAllocator& allocator) {
  if (disabled_ || num_tokens <= 0) return 0;
  // Min-heap of unlocked leaves by (last_access_time, id).
  auto later = [](const TreeNode* a, const TreeNode* b) {
    return std::pair(a->last_access_time_, a->id_) > std::pair(b->last_access_time_, b->id_);
  };
  std::vector<TreeNode*> leaves;
  std::vector<TreeNode*> stack = all_roots();
  while (!stack.empty()) {
    TreeNode* n = stack.back();
    stack.pop_back();
    if (n->children_.empty() && n->parent_ != nullptr && n->lock_ref_ == 0) leaves.push_back(n);
    for (auto& [token, child] : n->children_) stack.push_back(child.get());
  }
  std::priority_queue<TreeNode*, std::vector<TreeNode*>, decltype(later)> heap(later,
                                                                               std::move(leaves));
  int64_t evicted = 0;
  while (evicted < num_tokens && !heap.empty()) {
    TreeNode* leaf = heap.top();
    heap.pop();
    allocator.free(leaf->value_);
    const auto n = static_cast<int64_t>(leaf->value_.size());
    evicted += n;
    evictable_size_ -= n;
    TreeNode* parent = leaf->parent_;
    const int32_t first_token = leaf->key_[0];  // not a reference into the erased node
    parent->children_.erase(first_token);       // destroys `leaf`
    // A parent of an unlocked leaf may still be locked (a lock on the parent itself).
    if (parent->parent_ == nullptr) {
      drop_if_unused(parent);
    } else if (parent->children_.empty() && parent->lock_ref_ == 0) {
      heap.push(parent);
    }
  }
  return evicted;
}

bool RadixCache::reset(TokenToKvPoolAllocator& allocator) {
  if (num_node_locks_ > 0) return false;
  for (TreeNode* root : all_roots()) {
    std::vector<const TreeNode*> stack = {root};
    while (!stack.empty()) {
      const TreeNode* n = stack.back();
      stack.pop_back();
      allocator.free(n->value_);
      for (const auto& [token, child] : n->children_) stack.push_back(child.get());
    }
    root->children_.clear();
    drop_if_unused(root);
  }
  SGL_CHECK_EQ(protected_size_, 0);
  evictable_size_ = 0;
  return true;
}

Status RadixCache::check_integrity() const {
  int64_t evictable = 0;
  int64_t protected_tokens = 0;
  int64_t node_locks = 0;  // sum over non-root nodes of lock_ref - children's lock_refs
  int64_t root_locks = 0;  // the same over the roots
  std::unordered_set<int32_t> slots;
  for (const TreeNode* root : all_roots()) {
    const std::string in = "namespace '" + root->namespace_ + "': ";
    if (root->parent_ != nullptr || !root->key_.empty() || !root->value_.empty()) {
      return internal_error(in + "a root must have no parent and an empty key/value");
    }
    if (root != root_.get() && root->children_.empty() && root->lock_ref_ == 0) {
      return internal_error(in + "its root holds no node and no lock but was kept");
    }
    if (disabled_ && !root->children_.empty()) {
      return internal_error("a disabled RadixCache holds nodes");
    }
    std::vector<const TreeNode*> stack = {root};
    while (!stack.empty()) {
      const TreeNode* n = stack.back();
      stack.pop_back();
      int64_t children_locks = 0;
      for (const auto& [token, child] : n->children_) {
        if (child == nullptr) return internal_error("null child");
        auto where = [&in, id = child->id_] { return in + "node " + std::to_string(id); };
        if (child->parent_ != n) return internal_error(where() + ": wrong parent link");
        if (child->key_.empty()) return internal_error(where() + ": empty key below the root");
        if (!child->namespace_.empty()) return internal_error(where() + ": names a namespace");
        if (child->key_.size() != child->value_.size()) {
          return internal_error(where() + ": key length " + std::to_string(child->key_.size()) +
                                " != value length " + std::to_string(child->value_.size()));
        }
        if (child->key_[0] != token) {
          return internal_error(where() + ": keyed by token " + std::to_string(token) +
                                " but its key starts with " + std::to_string(child->key_[0]));
        }
        if (child->lock_ref_ < 0) return internal_error(where() + ": negative lock_ref");
        if (child->last_access_time_ > n->last_access_time_ || child->last_access_time_ > clock_) {
          return internal_error(where() + ": accessed later than its parent");
        }
        const auto len = static_cast<int64_t>(child->value_.size());
        (child->lock_ref_ > 0 ? protected_tokens : evictable) += len;
        for (int32_t slot : child->value_) {
          if (slot <= 0)
            return internal_error(where() + ": holds invalid slot " + std::to_string(slot));
          if (!slots.insert(slot).second) {
            return internal_error("slot " + std::to_string(slot) + " appears twice in the tree");
          }
        }
        children_locks += child->lock_ref_;
        stack.push_back(child.get());
      }
      if (n->lock_ref_ < children_locks) {
        return internal_error(in + "node " + std::to_string(n->id_) + ": lock_ref " +
                              std::to_string(n->lock_ref_) + " < its children's " +
                              std::to_string(children_locks));
      }
      (n == root ? root_locks : node_locks) += n->lock_ref_ - children_locks;
    }
  }
  if (node_locks != num_node_locks_ || node_locks + root_locks != num_locks_) {
    return internal_error("lock_refs account for " + std::to_string(node_locks) + " + " +
                          std::to_string(root_locks) + " locks (nodes + roots) but " +
                          std::to_string(num_node_locks_) + " + " +
                          std::to_string(num_locks_ - num_node_locks_) + " are outstanding");
  }
  if (evictable != evictable_size_ || protected_tokens != protected_size_) {
    return internal_error("sizes: evictable " + std::to_string(evictable_size_) + " (tree " +
                          std::to_string(evictable) + "), protected " +
                          std::to_string(protected_size_) + " (tree " +
                          std::to_string(protected_tokens) + ")");
  }
  return Status::ok_status();
}

Status RadixCache::check_integrity(const TokenToKvPoolAllocator& allocator,
                                   int64_t slots_held_outside_tree) const {
  SGL_RETURN_IF_ERROR(check_integrity());
  std::vector<TreeNode*> stack = all_roots();
  while (!stack.empty()) {
    const TreeNode* n = stack.back();
    stack.pop_back();
    for (int32_t slot : n->value_) {
      if (slot >= allocator.num_slots()) {
        return internal_error("tree slot " + std::to_string(slot) + " beyond the allocator's " +
                              std::to_string(allocator.num_slots()));
      }
    }
    for (const auto& [token, child] : n->children_) stack.push_back(child.get());
  }
  const int64_t accounted = allocator.available() + total_size() + slots_held_outside_tree;
  if (accounted != allocator.capacity()) {
    return internal_error("KV slots not conserved: free " + std::to_string(allocator.available()) +
                          " + tree " + std::to_string(total_size()) + " + requests " +
                          std::to_string(slots_held_outside_tree) + " != capacity " +
                          std::to_string(allocator.capacity()));
  }
  return Status::ok_status();
}

std::string RadixCache::debug_string() const {
  std::ostringstream os;
  for (const TreeNode* root : all_roots()) {
    if (root != root_.get()) os << "namespace '" << root->namespace_ << "':\n";
    std::vector<std::pair<const TreeNode*, size_t>> stack = {{root, 0}};
    while (!stack.empty()) {
      auto [n, depth] = stack.back();
      stack.pop_back();
      os << std::string(2 * depth, ' ') << "[" << join(n->key_) << "] -> [" << join(n->value_)
         << "] lock_ref=" << n->lock_ref_ << " t=" << n->last_access_time_ << "\n";
      std::vector<const TreeNode*> children;
      for (const auto& [token, child] : n->children_) children.push_back(child.get());
      // Pushed in descending token order so they print ascending.
      std::sort(children.begin(), children.end(),
                [](const TreeNode* a, const TreeNode* b) { return a->key_[0] > b->key_[0]; });
      for (const TreeNode* c : children) stack.emplace_back(c, depth + 1);
    }
  }
  return os.str();
}

}  // namespace sgl::cache
