// The vocabulary as a trie in preorder.
#include "grammar/token_trie.h"

#include <algorithm>
#include <numeric>

#include "grammar/utf8.h"

namespace sgl::grammar {

TokenTrie::TokenTrie(const std::vector<std::string>& tokens, const std::vector<uint8_t>& excluded) {
  std::vector<int32_t> order;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!tokens[i].empty() && !(i < excluded.size() && excluded[i])) {
      order.push_back(static_cast<int32_t>(i));
    }
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return tokens[a] != tokens[b] ? tokens[a] < tokens[b] : a < b;
  });
  // Sorted tokens are the trie's preorder: each token adds the nodes of its bytes past the
  // common prefix with the previous token. `path` holds the current root-to-node chain.
  byte_ = {0};
  depth_ = {0};
  parent_ = {-1};
  std::vector<int32_t> count = {0};  // tokens ending at each node
  std::vector<NodeId> path = {0};
  std::vector<int32_t> node_of_token(order.size());
  std::string_view prev;
  for (size_t k = 0; k < order.size(); ++k) {
    const std::string& t = tokens[order[k]];
    size_t lcp = 0;
    while (lcp < prev.size() && lcp < t.size() && prev[lcp] == t[lcp]) ++lcp;
    path.resize(lcp + 1);
    for (size_t d = lcp; d < t.size(); ++d) {
      const auto n = static_cast<NodeId>(byte_.size());
      byte_.push_back(static_cast<uint8_t>(t[d]));
      depth_.push_back(static_cast<int32_t>(d + 1));
      parent_.push_back(path.back());
      count.push_back(0);
      path.push_back(n);
    }
    ++count[path.back()];
    node_of_token[k] = path.back();
    prev = t;
  }
  const auto n = static_cast<int32_t>(byte_.size());
  // Subtree ends: a node's subtree ends where the next node of depth <= its own begins.
  subtree_end_.assign(n, n);
  std::vector<NodeId> open;
  for (NodeId i = 0; i < n; ++i) {
    while (!open.empty() && depth_[open.back()] >= depth_[i]) {
      subtree_end_[open.back()] = i;
      open.pop_back();
    }
    open.push_back(i);
  }
  token_offset_.assign(n + 1, 0);
  for (NodeId i = 0; i < n; ++i) token_offset_[i + 1] = token_offset_[i] + count[i];
  token_ids_.resize(order.size());
  std::vector<int32_t> fill(token_offset_.begin(), token_offset_.end() - 1);
  for (size_t k = 0; k < order.size(); ++k) token_ids_[fill[node_of_token[k]]++] = order[k];
  for (NodeId i = 0; i < n; ++i) {
    if (count[i] > 0) terminals_.push_back(i);
  }
  // Plain text: the UTF-8 state top-down, then "everything below is plain" bottom-up.
  std::vector<uint8_t> utf8(n, 0), plain_edge(n, 0);
  for (NodeId i = 1; i < n; ++i) {
    const uint8_t b = byte_[i];
    utf8[i] = utf8_next_state(utf8[parent_[i]], b);
    plain_edge[i] = utf8[i] != kUtf8Invalid && b != '"' && b != '\\' && b >= 0x20 && b != 0x7F;
  }
  plain_to_.assign(n, 0);
  for (NodeId i = 1; i < n; ++i) {
    const int32_t before = plain_to_[parent_[i]];
    const int32_t starts = (byte_[i] & 0xC0) != 0x80 ? 1 : 0;
    plain_to_[i] = static_cast<uint8_t>(
        before == kNotPlain || !plain_edge[i] ? kNotPlain : std::min(before + starts, kNotPlain));
  }
  plain_below_.assign(n, 1);
  for (NodeId i = n - 1; i > 0; --i) {
    if (!plain_edge[i] || !plain_below_[i]) plain_below_[parent_[i]] = 0;
  }
  for (NodeId i = 0; i < n; ++i) {
    if (utf8[i] != 0) plain_below_[i] = 0;
  }
  std::vector<int32_t> chars(n, 0);
  for (NodeId i = n - 1; i > 0; --i) {
    const int32_t starts = (byte_[i] & 0xC0) != 0x80 ? 1 : 0;  // a byte that begins a character
    chars[parent_[i]] = std::max(chars[parent_[i]], chars[i] + starts);
  }
  chars_below_.resize(n);
  for (NodeId i = 0; i < n; ++i) chars_below_[i] = static_cast<uint8_t>(std::min(chars[i], 255));
}

}  // namespace sgl::grammar
