// load_chat_template and its check at start.
#include "server/chat_template_loader.h"

#include <chrono>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>

#include "core/logging.h"
#include "tokenizer/chat_template/json_value.h"
#include "tokenizer/file_reader.h"
#include "tokenizer/tokenizer_config.h"

namespace sgl::server {
namespace {

constexpr auto kCheckTimeout = std::chrono::seconds(5);
constexpr const char* kCheckConversation = R"([{"role": "user", "content": "Hello"}])";

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// --chat-template FILE's Jinja source: the file itself, or a .json file's "chat_template" string
// (transformers' chat_template.json). SGLang's JSON conversation templates (roles, separators)
// are refused, never rendered as literal text; so is an empty file.
Result<std::string> read_template_file(const std::string& path) {
  auto text = tokenizer::read_file(path);
  if (!text.ok()) {
    return Status(text.status().code(),
                  "cannot read --chat-template " + path + ": " + text.status().message());
  }
  std::string source = std::move(text).value();
  if (std::filesystem::path(path).extension() == ".json") {
    const nlohmann::json root = nlohmann::json::parse(source, nullptr, /*allow_exceptions=*/false);
    const auto* tmpl =
        root.is_object() && root.contains("chat_template") && root["chat_template"].is_string()
            ? root["chat_template"].get_ptr<const std::string*>()
            : nullptr;
    if (tmpl == nullptr) {
      return invalid_argument("--chat-template " + path +
                              ": a .json file must hold {\"chat_template\": \"<Jinja>\"}; "
                              "SGLang's JSON conversation templates are not supported");
    }
    source = *tmpl;
  }
  if (source.find_first_not_of(" \t\r\n") == std::string::npos) {
    return invalid_argument("--chat-template " + path + " is empty");
  }
  return source;
}

// --hf-chat-template-name: the named template of the tokenizer directory's tokenizer_config.json.
Result<std::string> named_chat_template(const std::string& tokenizer_path,
                                        const std::string& name) {
  const std::filesystem::path dir(tokenizer_path);
  if (!std::filesystem::is_directory(dir)) {
    return invalid_argument("--hf-chat-template-name needs a Hugging Face tokenizer directory; " +
                            tokenizer_path + " is not one");
  }
  SGL_ASSIGN_OR_RETURN(const tokenizer::TokenizerConfig config,
                       tokenizer::load_tokenizer_config(dir));
  std::string available;
  for (const auto& [candidate, text] : config.named_chat_templates) {
    if (candidate == name) return text;
    available += (available.empty() ? "" : ", ") + candidate;
  }
  return invalid_argument("--hf-chat-template-name: template '" + name + "' not found in " +
                          tokenizer_path + " (" +
                          (available.empty() ? std::string("it names no templates")
                                             : "available templates: " + available) +
                          ")");
}

}  // namespace

Status check_chat_template(const tokenizer::ChatTemplate& chat_template,
                           const std::string& bos_token, const std::string& eos_token,
                           WorkPool& pool) {
  std::promise<Status> done;
  std::future<Status> result = done.get_future();
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  const bool queued = pool.submit(cancelled, [&](const std::atomic<bool>& cancel) {
    tokenizer::ChatTemplateInputs inputs;
    auto messages = tokenizer::jinja::value_from_json(kCheckConversation);
    if (!messages.ok()) return done.set_value(messages.status());
    inputs.messages = std::move(messages).value();
    inputs.add_generation_prompt = true;
    inputs.bos_token = bos_token;
    inputs.eos_token = eos_token;
    tokenizer::RenderOptions options;
    options.cancelled = &cancel;
    options.deadline = std::chrono::steady_clock::now() + kCheckTimeout;
    auto rendered = chat_template.apply(inputs, options);
    done.set_value(rendered.ok() ? Status::ok_status() : rendered.status());
  });
  if (!queued) return internal_error("cannot check the chat template: the work pool is stopped");
  Status s = result.get();
  if (s.ok() || s.code() == StatusCode::kResourceExhausted) return s;
  const std::string& message = s.message();
  if (starts_with(message, "TypeError: ") || starts_with(message, "UndefinedError: ")) {
    SGL_LOG_WARN << "the chat template does not render a bare user message (" << message
                 << "); it may need tools or template kwargs in each request";
    return Status::ok_status();
  }
  return s;
}

Status check_chat_template_file(const std::string& chat_template_path) {
  SGL_ASSIGN_OR_RETURN(const std::string source, read_template_file(chat_template_path));
  const auto parsed = tokenizer::ChatTemplate::parse(source);
  if (parsed.ok()) return Status::ok_status();
  return Status(parsed.status().code(), "chat template " + chat_template_path +
                                            " does not parse: " + parsed.status().message());
}

Result<LoadedChatTemplate> load_chat_template(const std::string& chat_template_path,
                                              const std::string& tokenizer_path,
                                              const tokenizer::Tokenizer& tokenizer, WorkPool& pool,
                                              const std::string& hf_chat_template_name) {
  LoadedChatTemplate loaded;
  std::string source = tokenizer.chat_template();
  loaded.origin = tokenizer_path + " (the tokenizer's)";
  const bool explicit_template = !chat_template_path.empty() || !hf_chat_template_name.empty();
  if (!hf_chat_template_name.empty()) {
    SGL_ASSIGN_OR_RETURN(source, named_chat_template(tokenizer_path, hf_chat_template_name));
    loaded.origin = tokenizer_path + " (its template '" + hf_chat_template_name + "')";
  } else if (explicit_template) {
    SGL_ASSIGN_OR_RETURN(source, read_template_file(chat_template_path));
    loaded.origin = chat_template_path;
  }
  if (source.empty()) {
    SGL_LOG_WARN << tokenizer_path
                 << " has no chat template; /v1/chat/completions answers 400 (pass "
                    "--chat-template FILE)";
    return loaded;
  }
  auto parsed = tokenizer::ChatTemplate::parse(source);
  Status status = parsed.ok() ? check_chat_template(*parsed, tokenizer.bos_token().value_or(""),
                                                    tokenizer.eos_token().value_or(""), pool)
                              : parsed.status();
  if (!status.ok()) {
    const std::string what = parsed.ok() ? "fails on a one-message conversation" : "does not parse";
    if (explicit_template) {
      return Status(status.code(),
                    "chat template " + loaded.origin + " " + what + ": " + status.message());
    }
    SGL_LOG_WARN << "chat template " << loaded.origin << " " << what << " (" << status.message()
                 << "); chat completions are disabled";
    return loaded;
  }
  loaded.chat_template = std::move(parsed).value();
  return loaded;
}

}  // namespace sgl::server
