// ChatTemplate: a Jinja chat template parsed once and rendered like transformers'
// apply_chat_template (trim_blocks, lstrip_blocks, loop controls, immutable sandbox).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/chat_template/render_options.h"
#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer {

namespace jinja {
struct Stmt;
}  // namespace jinja

// Inputs of apply_chat_template; build messages/tools with jinja::value_from_json
// (chat_template/json_value.h) or construct Values directly.
struct ChatTemplateInputs {
  jinja::Value messages = jinja::Value::list();  // list of message dicts
  jinja::Value tools = jinja::Value::none();     // list of tool schemas, or none
  jinja::Value documents = jinja::Value::none();
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  jinja::DictData extra_context;  // chat_template_kwargs, e.g. enable_thinking
};

// Immutable after parse(); render()/apply() are const and safe to call from several threads.
// Errors are Statuses: syntax errors name the line; raise_exception() yields the template's own
// message; other runtime errors read like Jinja's Python exceptions ("TypeError: ...").
class ChatTemplate {
 public:
  static Result<ChatTemplate> parse(std::string_view source);

  // Renders with `context` as the template variables.
  Result<std::string> render(const jinja::DictData& context,
                             const RenderOptions& options = {}) const;
  // Renders with the variables of a JSON object.
  Result<std::string> render_json(std::string_view context_json,
                                  const RenderOptions& options = {}) const;
  // transformers' apply_chat_template: messages, tools, documents, add_generation_prompt,
  // bos_token, eos_token, then the extra context.
  Result<std::string> apply(const ChatTemplateInputs& inputs,
                            const RenderOptions& options = {}) const;

  const std::string& source() const { return source_; }

 private:
  ChatTemplate(std::string source,
               std::shared_ptr<const std::vector<std::unique_ptr<jinja::Stmt>>> body)
      : source_(std::move(source)), body_(std::move(body)) {}

  std::string source_;
  std::shared_ptr<const std::vector<std::unique_ptr<jinja::Stmt>>> body_;
};

// One-shot convenience over JSON text: messages_json is an array, tools_json an array or empty
// (tools = None), extra_context_json an object or empty.
Result<std::string> apply_chat_template(std::string_view template_source,
                                        std::string_view messages_json, std::string_view tools_json,
                                        bool add_generation_prompt, std::string_view bos_token,
                                        std::string_view eos_token,
                                        std::string_view extra_context_json = {},
                                        const RenderOptions& options = {});

}  // namespace sgl::tokenizer
