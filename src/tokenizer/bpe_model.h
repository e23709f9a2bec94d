// BpeModel: byte-pair-encoding of one pre-tokenized word into vocab ids (HF "BPE" model).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "tokenizer/merge_table.h"
#include "tokenizer/word_cache.h"

namespace sgl::tokenizer {

struct BpeOptions {
  std::optional<std::string> unk_token;
  std::string continuing_subword_prefix;  // added to every symbol but a word's first
  std::string end_of_word_suffix;         // added to a word's last symbol
  bool fuse_unk = false;                  // consecutive unknown characters -> one unk
  bool byte_fallback = false;             // unknown characters -> <0xXX> byte tokens
  bool ignore_merges = false;             // a word that is itself in the vocab is one token
  size_t cache_capacity = 65536;          // words cached (0 disables the cache)
};

struct TransparentStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, int32_t, TransparentStringHash, std::equal_to<>>;

// Immutable after create(); tokenize() is const and thread-safe (the word cache locks).
class BpeModel {
 public:
  using Merge = std::pair<std::string, std::string>;

  // `merges` in rank order. Errors (InvalidArgument/DataLoss) name the offending field as
  // "model.vocab" / "model.merges[i]"; the loader adds the file name.
  static Result<std::unique_ptr<BpeModel>> create(Vocab vocab, const std::vector<Merge>& merges,
                                                  BpeOptions options);

  // Appends the ids of `word` (valid UTF-8, non-empty) to `ids`. Characters that are neither
  // in the vocab nor byte-fallback-able become unk, or are dropped when there is no unk.
  void tokenize(std::string_view word, std::vector<int32_t>& ids) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // nullptr when `id` has no token.
  const std::string* id_to_token(int32_t id) const;
  // One past the largest id.
  int64_t id_limit() const { return static_cast<int64_t>(id_to_token_.size()); }
  const Vocab& vocab() const { return vocab_; }
  size_t num_merges() const { return merges_.size(); }

 private:
  BpeModel() = default;
  // Id of one symbol string, or -1.
  int32_t symbol_id(std::string_view symbol) const;
  // BPE of `word` through the cache.
  void tokenize_cached(std::string_view word, std::vector<int32_t>& ids) const;
  void merge_word(std::string_view word, std::vector<int32_t>& ids) const;
  // Sets chunk_marker_ when "▁" can only begin tokens (see tokenize()).
  void detect_chunk_marker();

  Vocab vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<uint8_t> has_token_;
  MergeTable merges_;
  BpeOptions options_;
  int32_t unk_id_ = -1;
  int32_t byte_ids_[256];          // <0xXX> tokens, -1 when absent
  std::vector<int32_t> char_ids_;  // single-code-point tokens below 0x10000, -1 when absent
  std::string chunk_marker_;       // "▁" when words may be cut before it; empty otherwise
  std::unique_ptr<WordCache> cache_;
};

}  // namespace sgl::tokenizer
