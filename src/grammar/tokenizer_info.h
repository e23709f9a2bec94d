// What the grammar engine knows of a tokenizer: each token's bytes (the tokenizer's decoded
// bytes, not its string form), the stop ids, the vocabulary trie and the plain-text token sets.
// Built once per model and shared read-only by every compiled grammar (on any thread).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/class_token_sets.h"
#include "grammar/plain_token_sets.h"
#include "grammar/token_trie.h"

namespace sgl::grammar {

class TokenizerInfo {
 public:
  // `tokens[id]`: the bytes of token id. `vocab_size`: the logits' width (>= tokens.size(); the
  // bitmask covers it; ids past the tokenizer's are never allowed). `stop_ids`: tokens that end
  // generation (EOS, EOT), allowed exactly where the grammar can end. `special_ids`: other
  // control tokens, never allowed. Tokens with no bytes are treated as special.
  static Result<TokenizerInfo> create(std::vector<std::string> tokens, int32_t vocab_size,
                                      std::vector<int32_t> stop_ids,
                                      std::vector<int32_t> special_ids = {});
  // An empty vocabulary: for matching bytes only (tests, validation of a grammar).
  TokenizerInfo() : trie_({}, {}), plain_(tokens_, excluded_, 0) {}

  int32_t vocab_size() const { return vocab_size_; }
  int32_t bitmask_words() const { return (vocab_size_ + 31) / 32; }
  int32_t num_tokens() const { return static_cast<int32_t>(tokens_.size()); }
  const std::string& token_bytes(int32_t id) const { return tokens_[id]; }
  bool is_stop(int32_t id) const { return id >= 0 && id < num_tokens() && stop_[id] != 0; }
  // A token the grammar can produce: a known id with bytes, neither stop nor special.
  bool is_regular(int32_t id) const { return id >= 0 && id < num_tokens() && excluded_[id] == 0; }
  const std::vector<int32_t>& stop_ids() const { return stop_ids_; }
  const TokenTrie& trie() const { return trie_; }
  const PlainTokenSets& plain_tokens() const { return plain_; }
  // The tokens and trie exits of a byte class, built on first use (ClassTokenSets).
  std::shared_ptr<const ClassTokenSets> class_tokens(const ByteClass& cls) const {
    return classes_->get(trie_, cls, bitmask_words());
  }

 private:
  TokenizerInfo(std::vector<std::string> tokens, int32_t vocab_size, std::vector<int32_t> stop_ids,
                std::vector<uint8_t> stop, std::vector<uint8_t> excluded);

  std::vector<std::string> tokens_;
  int32_t vocab_size_ = 0;
  std::vector<int32_t> stop_ids_;
  std::vector<uint8_t> stop_;
  std::vector<uint8_t> excluded_;  // stop, special or empty
  TokenTrie trie_;
  PlainTokenSets plain_;
  // Behind a pointer: the cache holds a mutex, and a TokenizerInfo is moved once built.
  std::unique_ptr<ClassTokenCache> classes_ = std::make_unique<ClassTokenCache>();
};

}  // namespace sgl::grammar
