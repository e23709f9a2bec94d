// What the grammar engine knows of a tokenizer.
#include "grammar/tokenizer_info.h"

namespace sgl::grammar {

Result<TokenizerInfo> TokenizerInfo::create(std::vector<std::string> tokens, int32_t vocab_size,
                                            std::vector<int32_t> stop_ids,
                                            std::vector<int32_t> special_ids) {
  const auto n = static_cast<int64_t>(tokens.size());
  if (vocab_size < n) {
    return invalid_argument("tokenizer info: vocab_size " + std::to_string(vocab_size) +
                            " is below the number of tokens " + std::to_string(n));
  }
  std::vector<uint8_t> stop(n, 0), excluded(n, 0);
  for (int32_t id : stop_ids) {
    if (id < 0 || id >= n) {
      return invalid_argument("tokenizer info: stop id " + std::to_string(id) + " out of range");
    }
    stop[id] = 1;
    excluded[id] = 1;
  }
  for (int32_t id : special_ids) {
    if (id < 0 || id >= n) {
      return invalid_argument("tokenizer info: special id " + std::to_string(id) + " out of range");
    }
    excluded[id] = 1;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i].empty()) excluded[i] = 1;
  }
  return TokenizerInfo(std::move(tokens), vocab_size, std::move(stop_ids), std::move(stop),
                       std::move(excluded));
}

TokenizerInfo::TokenizerInfo(std::vector<std::string> tokens, int32_t vocab_size,
                             std::vector<int32_t> stop_ids, std::vector<uint8_t> stop,
                             std::vector<uint8_t> excluded)
    : tokens_(std::move(tokens)),
      vocab_size_(vocab_size),
      stop_ids_(std::move(stop_ids)),
      stop_(std::move(stop)),
      excluded_(std::move(excluded)),
      trie_(tokens_, excluded_),
      plain_(tokens_, excluded_, bitmask_words()) {}

}  // namespace sgl::grammar
