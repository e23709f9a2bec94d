// ChatTemplate facade: parsing, rendering and apply_chat_template.
#include "tokenizer/chat_template/chat_template.h"

#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/json_value.h"
#include "tokenizer/chat_template/parser.h"

namespace sgl::tokenizer {

Result<ChatTemplate> ChatTemplate::parse(std::string_view source) {
  jinja::LexerOptions lexer_options;  // transformers: trim_blocks and lstrip_blocks on
  SGL_ASSIGN_OR_RETURN(jinja::Body body, jinja::parse_template(source, lexer_options));
  return ChatTemplate(std::string(source), std::make_shared<const jinja::Body>(std::move(body)));
}

Result<std::string> ChatTemplate::render(const jinja::DictData& context,
                                         const RenderOptions& options) const {
  jinja::Interpreter interpreter(options, context);
  return interpreter.render(*body_);
}

Result<std::string> ChatTemplate::render_json(std::string_view context_json,
                                              const RenderOptions& options) const {
  SGL_ASSIGN_OR_RETURN(jinja::Value context, jinja::value_from_json(context_json));
  if (!context.is_dict()) return invalid_argument("template context must be a JSON object");
  return render(context.dict_data(), options);
}

Result<std::string> ChatTemplate::apply(const ChatTemplateInputs& inputs,
                                        const RenderOptions& options) const {
  jinja::DictData context;
  context.set("messages", inputs.messages);
  context.set("tools", inputs.tools);
  context.set("documents", inputs.documents);
  context.set("add_generation_prompt", jinja::Value(inputs.add_generation_prompt));
  context.set("bos_token", jinja::Value(inputs.bos_token));
  context.set("eos_token", jinja::Value(inputs.eos_token));
  for (const auto& [key, value] : inputs.extra_context.entries()) context.set(key, value);
  return render(context, options);
}

Result<std::string> apply_chat_template(std::string_view template_source,
                                        std::string_view messages_json, std::string_view tools_json,
                                        bool add_generation_prompt, std::string_view bos_token,
                                        std::string_view eos_token,
                                        std::string_view extra_context_json,
                                        const RenderOptions& options) {
  SGL_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::parse(template_source));
  ChatTemplateInputs inputs;
  SGL_ASSIGN_OR_RETURN(inputs.messages, jinja::value_from_json(messages_json));
  if (!tools_json.empty()) {
    SGL_ASSIGN_OR_RETURN(inputs.tools, jinja::value_from_json(tools_json));
  }
  if (!extra_context_json.empty()) {
    SGL_ASSIGN_OR_RETURN(jinja::Value extra, jinja::value_from_json(extra_context_json));
    if (!extra.is_dict()) return invalid_argument("extra context must be a JSON object");
    inputs.extra_context = extra.dict_data();
  }
  inputs.add_generation_prompt = add_generation_prompt;
  inputs.bos_token = std::string(bos_token);
  inputs.eos_token = std::string(eos_token);
  return tmpl.apply(inputs, options);
}

}  // namespace sgl::tokenizer
