// Per tokenizer and per byte class (a set of ASCII bytes, optionally with every valid multibyte
// UTF-8 character): the tokens made only of the class's characters, and the trie's "exit"
// nodes, where a path of class characters from the root first takes a byte outside the class.
//
// A stack set that every class character leads back to (a character loop: a JSON string, an
// email's local part) is the same after any class prefix, so a mask walk from it accepts the
// class tokens as one bitmask and only needs to step the exits (a few thousand nodes instead of
// most of the trie).
//
// Built on first use of a class and immutable afterwards; the cache is shared by every grammar
// over the tokenizer and by every thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <tuple>
#include <vector>

#include "grammar/token_trie.h"

namespace sgl::grammar {

struct ByteClass {
  uint64_t ascii[2] = {0, 0};  // bit b: ASCII byte b is in the class
  bool utf8 = false;           // every valid multibyte character is in the class

  bool has(uint8_t b) const { return b < 0x80 && ((ascii[b >> 6] >> (b & 63)) & 1) != 0; }
  void add(uint8_t b) { ascii[b >> 6] |= uint64_t{1} << (b & 63); }
  bool empty() const { return ascii[0] == 0 && ascii[1] == 0; }
  bool operator<(const ByteClass& o) const {
    return std::tie(ascii[0], ascii[1], utf8) < std::tie(o.ascii[0], o.ascii[1], o.utf8);
  }
};

class ClassTokenSets {
 public:
  // `words`: the bitmask's width in 32-bit words.
  ClassTokenSets(const TokenTrie& trie, const ByteClass& cls, int32_t words);

  const ByteClass& byte_class() const { return class_; }
  // Every token whose bytes are class characters (the last one possibly cut).
  std::span<const uint32_t> bits() const { return bits_; }
  // In preorder: nodes on a class path from the root where some token ends.
  const std::vector<TokenTrie::NodeId>& inside() const { return inside_; }
  // In preorder: the nodes of inside() whose path is not plain text (TokenTrie::plain_chars_to):
  // the class tokens that PlainTokenSets does not hold.
  const std::vector<TokenTrie::NodeId>& inside_not_plain() const { return inside_not_plain_; }
  // In preorder: nodes outside the class whose parent is the root or on a class path.
  const std::vector<TokenTrie::NodeId>& exits() const { return exits_; }

 private:
  ByteClass class_;
  std::vector<uint32_t> bits_;
  std::vector<TokenTrie::NodeId> inside_;
  std::vector<TokenTrie::NodeId> inside_not_plain_;
  std::vector<TokenTrie::NodeId> exits_;
};

// The ClassTokenSets of a tokenizer, built when first asked for. Thread-safe.
class ClassTokenCache {
 public:
  // The sets of `cls` over `trie` (always the same trie: the tokenizer's); nullptr once
  // kMaxClasses classes are held (the caller walks the trie instead).
  std::shared_ptr<const ClassTokenSets> get(const TokenTrie& trie, const ByteClass& cls,
                                            int32_t words);
  static constexpr size_t kMaxClasses = 64;

 private:
  std::mutex mu_;
  std::map<ByteClass, std::shared_ptr<const ClassTokenSets>> sets_;
};

}  // namespace sgl::grammar
