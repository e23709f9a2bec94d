// TokenizerConfig: what tokenizer_config.json (and generation_config.json) add to tokenizer.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "tokenizer/added_vocabulary.h"

namespace sgl::tokenizer {

struct TokenizerConfig {
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<std::string> unk_token;
  std::optional<std::string> pad_token;
  std::vector<std::string> additional_special_tokens;
  // Explicit values override what the post-processor adds (unset: the post-processor decides).
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  bool clean_up_tokenization_spaces = false;
  // The default template ("default" entry when the file lists several, else the first); empty
  // if none.
  std::string chat_template;
  // tokenizer_config.json's list of named templates (name, template), in its order; empty when
  // it gives one template (SGLang's --hf-chat-template-name picks one).
  std::vector<std::pair<std::string, std::string>> named_chat_templates;
  // added_tokens_decoder entries ({"<id>": {content, special, ...}}).
  std::vector<AddedToken> added_tokens;
  // generation_config.json's eos_token_id (int or list), when present.
  std::vector<int32_t> generation_eos_token_ids;
};

// Parses tokenizer_config.json text into `config`.
Status parse_tokenizer_config(std::string_view json_text, const std::string& file,
                              TokenizerConfig& config);
// Parses generation_config.json text into `config`.
Status parse_generation_config(std::string_view json_text, const std::string& file,
                               TokenizerConfig& config);

// Loads <dir>/tokenizer_config.json, <dir>/generation_config.json and a chat template kept in
// <dir>/chat_template.jinja or <dir>/chat_template.json; each file is optional.
Result<TokenizerConfig> load_tokenizer_config(const std::filesystem::path& dir);

}  // namespace sgl::tokenizer
