// load_chat_template and its check at start.
#include "server/chat_template_loader.h"

#include <chrono>
#include <fstream>
#include <future>
#include <sstream>

#include "core/logging.h"
#include "tokenizer/chat_template/json_value.h"

namespace sgl::server {
namespace {

constexpr auto kCheckTimeout = std::chrono::seconds(5);
constexpr const char* kCheckConversation = R"([{"role": "user", "content": "Hello"}])";

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

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

Result<LoadedChatTemplate> load_chat_template(const std::string& chat_template_path,
                                              const std::string& tokenizer_path,
                                              const tokenizer::Tokenizer& tokenizer,
                                              WorkPool& pool) {
  LoadedChatTemplate loaded;
  std::string source = tokenizer.chat_template();
  loaded.origin = tokenizer_path + " (the tokenizer's)";
  const bool explicit_template = !chat_template_path.empty();
  if (explicit_template) {
    std::ifstream in(chat_template_path, std::ios::binary);
    if (!in) return not_found("cannot read --chat-template " + chat_template_path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    source = buffer.str();
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
