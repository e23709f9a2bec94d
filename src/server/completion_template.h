// SGLang's completion templates (--completion-template): a code model's fill-in-the-middle
// markers, which turn /v1/completions' prompt and suffix into one prompt. Built in:
// deepseek_coder, star_coder, qwen_coder; or a JSON file with SGLang's fields (name,
// fim_begin_token, fim_middle_token, fim_end_token, fim_position MIDDLE or END).
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace sgl::server {

struct CompletionTemplate {
  std::string name;
  std::string fim_begin_token;
  std::string fim_middle_token;
  std::string fim_end_token;
  // Where the middle token goes: MIDDLE: begin prompt middle suffix end (DeepSeek-Coder's
  // begin / hole / end); END: begin prompt end suffix middle (StarCoder's and Qwen-Coder's
  // prefix / suffix / middle).
  bool middle_in_the_middle = false;
};

// A built-in template by name, or the JSON file at `name_or_path`.
Result<CompletionTemplate> load_completion_template(const std::string& name_or_path);

// The prompt for `prompt` with `suffix` after the gap the model fills.
std::string fill_in_the_middle(const CompletionTemplate& t, std::string_view prompt,
                               std::string_view suffix);

}  // namespace sgl::server
