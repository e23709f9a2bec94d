// HfTokenizer: the Tokenizer for Hugging Face tokenizer.json BPE models (byte-level and spm-style).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_config.h"
#include "tokenizer/tokenizer_json.h"

namespace sgl::tokenizer {

// Encoding runs HF's pipeline: split on added tokens (raw text), normalize each remaining piece,
// split on normalized added tokens, pre-tokenize, BPE each word, then post-process.
// Invalid UTF-8 input is first repaired like Rust's String::from_utf8_lossy (each maximal
// invalid sequence becomes U+FFFD), so encode never fails. Ids out of range are skipped by
// decode. Immutable after create(); encode/decode are const and thread-safe.
class HfTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<HfTokenizer>> create(TokenizerSpec spec, TokenizerConfig config);
  // Builds from tokenizer.json text (+ optional tokenizer_config.json text); for tests/tools.
  static Result<std::unique_ptr<HfTokenizer>> from_json(
      std::string_view tokenizer_json, std::string_view tokenizer_config_json = {});

  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options) const override;
  std::string decode(const std::vector<int32_t>& ids, const DecodeOptions& options) const override;

  int64_t vocab_size() const override { return vocab_size_; }
  std::optional<std::string> id_to_token(int32_t id) const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  std::optional<std::string> token_bytes(int32_t id) const override;
  bool is_special(int32_t id) const override;

  std::optional<int32_t> bos_token_id() const override { return bos_token_id_; }
  std::vector<int32_t> eos_token_ids() const override { return eos_token_ids_; }
  const std::string& chat_template() const override { return config_.chat_template; }
  std::optional<std::string> bos_token() const override { return config_.bos_token; }
  std::optional<std::string> eos_token() const override { return config_.eos_token; }

  // tokenizer_config.json's clean_up_tokenization_spaces (DecodeOptions decides per call).
  bool clean_up_tokenization_spaces() const { return config_.clean_up_tokenization_spaces; }

 private:
  HfTokenizer() = default;
  const std::string* token_string(int32_t id) const;
  // Model tokens for `text` (no post-processing); `text` is valid UTF-8.
  void encode_text(std::string_view text, std::vector<int32_t>& ids) const;

  TokenizerSpec spec_;
  TokenizerConfig config_;
  AddedVocabulary added_vocabulary_;
  Vocab added_by_content_;
  std::vector<std::string> added_strings_;       // decode form of each added token (never resized)
  std::vector<const std::string*> token_by_id_;  // added tokens first, then the model's
  std::vector<uint8_t> special_;                 // by id
  int64_t vocab_size_ = 0;
  std::optional<int32_t> bos_token_id_;
  std::optional<int32_t> eos_token_id_;  // tokenizer_config.json's eos_token
  std::vector<int32_t> eos_token_ids_;
  // Reconciliation of tokenizer_config.json's add_bos_token / add_eos_token with the
  // post-processor: ids to drop from / add to the processed sequence.
  bool drop_template_bos_ = false;
  bool drop_template_eos_ = false;
  bool prepend_bos_ = false;
  bool append_eos_ = false;
  // The special ids that add_special_tokens puts around the text, all reconciled, when the
  // post-processor wraps the sequence once (all real ones do): encode() then starts its ids with
  // the prefix instead of copying them into a processed vector.
  struct SpecialWrap {
    std::vector<int32_t> prefix;
    std::vector<int32_t> suffix;
  };
  std::optional<SpecialWrap> special_wrap_;
};

}  // namespace sgl::tokenizer
