// The vocabulary as a trie in preorder (the tokens' lexicographic order): walking it visits each
// shared prefix once, and a prefix no stack can accept skips its whole subtree in one jump.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sgl::grammar {

class TokenTrie {
 public:
  using NodeId = int32_t;

  // Node 0 is the root (the empty prefix). `tokens[id]` are the token's bytes; empty ones
  // and ids in `excluded` are left out.
  TokenTrie(const std::vector<std::string>& tokens, const std::vector<uint8_t>& excluded);

  int32_t num_nodes() const { return static_cast<int32_t>(byte_.size()); }
  uint8_t byte(NodeId n) const { return byte_[n]; }    // the edge into n
  int32_t depth(NodeId n) const { return depth_[n]; }  // bytes from the root
  NodeId parent(NodeId n) const { return parent_[n]; }
  // The node after n's subtree in preorder (n's descendants are n+1 .. end-1).
  NodeId subtree_end(NodeId n) const { return subtree_end_[n]; }
  // The token ids whose bytes end exactly at n (usually zero or one).
  std::span<const int32_t> tokens_at(NodeId n) const {
    return {token_ids_.data() + token_offset_[n], token_ids_.data() + token_offset_[n + 1]};
  }
  // The token ids ending at nodes [from, end), in preorder: a subtree's tokens are
  // tokens_in(n, subtree_end(n)).
  std::span<const int32_t> tokens_in(NodeId from, NodeId end) const {
    return {token_ids_.data() + token_offset_[from], token_ids_.data() + token_offset_[end]};
  }
  // Nodes where some token ends, in preorder.
  const std::vector<NodeId>& terminal_nodes() const { return terminals_; }
  // n ends on a code point boundary and every token below it continues with plain text only:
  // printable ASCII but `"` and `\`, and valid UTF-8 (possibly cut at the token's end). Inside
  // a JSON string (or any "any character" loop) such a subtree is accepted whole.
  bool plain_text_below(NodeId n) const { return plain_below_[n] != 0; }
  // The most code points a token below n adds past n (a cut last one counts; capped at 255).
  int32_t chars_below(NodeId n) const { return chars_below_[n]; }
  // The code points from the root to n when that path is plain text (as above, a cut last one
  // counts); kNotPlain otherwise, and for 254 or more.
  static constexpr int32_t kNotPlain = 255;
  int32_t plain_chars_to(NodeId n) const { return plain_to_[n]; }

 private:
  std::vector<uint8_t> byte_;
  std::vector<int32_t> depth_;
  std::vector<NodeId> parent_;
  std::vector<NodeId> subtree_end_;
  std::vector<int32_t> token_offset_;
  std::vector<int32_t> token_ids_;
  std::vector<NodeId> terminals_;
  std::vector<uint8_t> plain_below_;
  std::vector<uint8_t> chars_below_;
  std::vector<uint8_t> plain_to_;
};

}  // namespace sgl::grammar
