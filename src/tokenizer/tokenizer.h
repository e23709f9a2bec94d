// Tokenizer: text <-> token ids for a model, built from tokenizer.json (+ tokenizer_config.json).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace sgl::tokenizer {

struct EncodeOptions {
  bool add_special_tokens = true;  // BOS/EOS per the post-processor and tokenizer_config.json
};

struct DecodeOptions {
  bool skip_special_tokens = true;
  // transformers' clean_up_tokenization (" ." -> ".", " n't" -> "n't", ...). Off by default so
  // that decode(encode(x)) == x; tokenizer_config.json's value is exposed by HfTokenizer.
  bool clean_up_tokenization_spaces = false;
  // As transformers' slow tokenizers (and vLLM/SGLang): with special tokens kept, the text runs
  // between them are decoded separately and everything is joined with spaces. HF's fast
  // tokenizers ignore this option, hence the default.
  bool spaces_between_special_tokens = false;
};

// Immutable after load; encode/decode are const and thread-safe.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Loads <dir>/tokenizer.json (or tokenizer.json.gz; else GPT-2's vocab.json + merges.txt, .gz
  // allowed) and, when present, tokenizer_config.json, generation_config.json (eos ids) and
  // chat_template.jinja. Errors name the file and the field.
  static Result<std::unique_ptr<Tokenizer>> from_dir(const std::filesystem::path& dir);

  virtual std::vector<int32_t> encode(std::string_view text,
                                      const EncodeOptions& options) const = 0;
  virtual std::string decode(const std::vector<int32_t>& ids,
                             const DecodeOptions& options) const = 0;

  virtual int64_t vocab_size() const = 0;
  // The token's string as stored in the vocab ("▁the", "<0x0A>"); nullopt when out of range.
  virtual std::optional<std::string> id_to_token(int32_t id) const = 0;
  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  // The bytes the token adds to a decoded text mid-sequence ("▁the" -> " the", "<0x0A>" ->
  // "\n", a byte-level token's raw bytes, possibly part of a UTF-8 character); nullopt when out
  // of range. What grammars match tokens against (constrained decoding).
  virtual std::optional<std::string> token_bytes(int32_t id) const = 0;
  virtual bool is_special(int32_t id) const = 0;

  virtual std::optional<int32_t> bos_token_id() const = 0;
  virtual std::vector<int32_t> eos_token_ids() const = 0;
  // tokenizer_config.json's chat_template (the default one when it is a list); empty if none.
  virtual const std::string& chat_template() const = 0;
  virtual std::optional<std::string> bos_token() const = 0;
  virtual std::optional<std::string> eos_token() const = 0;
};

}  // namespace sgl::tokenizer
