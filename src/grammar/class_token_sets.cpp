// Tokens and exit nodes of a byte class, over the vocabulary trie.
#include "grammar/class_token_sets.h"

#include "grammar/utf8.h"

namespace sgl::grammar {

ClassTokenSets::ClassTokenSets(const TokenTrie& trie, const ByteClass& cls, int32_t words)
    : class_(cls), bits_(words, 0) {
  const int32_t n = trie.num_nodes();
  // Per node on a class path: the UTF-8 state after it (0: on a character boundary);
  // kUtf8Invalid: off the class paths.
  std::vector<uint8_t> utf8(n, kUtf8Invalid);
  if (n > 0) utf8[0] = 0;
  for (TokenTrie::NodeId v = 1; v < n; ++v) {
    const uint8_t at = utf8[trie.parent(v)];
    if (at == kUtf8Invalid) continue;
    const uint8_t b = trie.byte(v);
    uint8_t next = kUtf8Invalid;
    if (at == 0 && b < 0x80) {
      if (cls.has(b)) next = 0;
    } else if (cls.utf8) {
      next = utf8_next_state(at, b);
    }
    if (next == kUtf8Invalid) {
      exits_.push_back(v);
      continue;
    }
    utf8[v] = next;
    const auto ids = trie.tokens_at(v);
    if (ids.empty()) continue;
    inside_.push_back(v);
    if (trie.plain_chars_to(v) == TokenTrie::kNotPlain) inside_not_plain_.push_back(v);
    for (int32_t id : ids) bits_[id >> 5] |= 1u << (id & 31);
  }
}

std::shared_ptr<const ClassTokenSets> ClassTokenCache::get(const TokenTrie& trie,
                                                           const ByteClass& cls, int32_t words) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(cls);
  if (it != sets_.end()) return it->second;
  if (sets_.size() >= kMaxClasses) return nullptr;
  auto sets = std::make_shared<const ClassTokenSets>(trie, cls, words);
  sets_.emplace(cls, sets);
  return sets;
}

}  // namespace sgl::grammar
