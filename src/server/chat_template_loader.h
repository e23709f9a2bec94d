// Loading the chat template at start: --chat-template or the tokenizer's own, parsed and then
// rendered once on a tiny conversation, so that a broken template fails at start rather than
// at the first user.
#pragma once

#include <optional>
#include <string>

#include "core/status.h"
#include "server/work_pool.h"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace sgl::server {

struct LoadedChatTemplate {
  std::optional<tokenizer::ChatTemplate> chat_template;  // none: chat completions are refused
  std::string origin;  // how errors name it: the --chat-template path or the model's
};

// Renders [{"role": "user", "content": "Hello"}] with add_generation_prompt (the conversation
// nearly every template accepts) on `pool`, with the request limits and a 5 s deadline. Fails
// for a limit or an error the template raises itself; a TypeError or UndefinedError (the
// template wants inputs a bare conversation lacks: tools, its own kwargs) is only logged.
Status check_chat_template(const tokenizer::ChatTemplate& chat_template,
                           const std::string& bos_token, const std::string& eos_token,
                           WorkPool& pool);

// --chat-template's file read and parsed (not rendered: that needs the tokenizer and a pool),
// so that a wrong path or a broken template fails before the model loads.
Status check_chat_template_file(const std::string& chat_template_path);

// `chat_template_path` empty: the tokenizer's template, which is dropped with a warning when
// it fails to parse or to check; an explicit one that fails is an error. `hf_chat_template_name`
// (SGLang's --hf-chat-template-name; not with a path): the tokenizer directory's named template
// of that name, an error when it has none of that name.
Result<LoadedChatTemplate> load_chat_template(const std::string& chat_template_path,
                                              const std::string& tokenizer_path,
                                              const tokenizer::Tokenizer& tokenizer, WorkPool& pool,
                                              const std::string& hf_chat_template_name = {});

}  // namespace sgl::server
