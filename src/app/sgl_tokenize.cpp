// sgl-tokenize: encode, decode and render chat templates from the command line (JSON out).
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/cli_args.h"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace sgl::app {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kUsage = R"(usage: sgl-tokenize --tokenizer DIR
  (--text TEXT [--no-special] | --text-file FILE [--no-special] | --decode 1,2,3 |
   --chat FILE.json [--add-generation-prompt] [--template FILE.jinja])
)";

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json encoded(const tokenizer::Tokenizer& tok, const std::string& text, bool special) {
  const std::vector<int32_t> ids = tok.encode(text, {.add_special_tokens = special});
  json tokens = json::array();
  for (int32_t id : ids) tokens.push_back(tok.id_to_token(id).value_or(""));
  return {{"ids", ids}, {"tokens", tokens}};
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

Status render_chat(const tokenizer::Tokenizer& tok, const CliArgs& args) {
  SGL_ASSIGN_OR_RETURN(std::string chat_text, read_file(*args.get("--chat")));
  const json chat = json::parse(chat_text, nullptr, false);
  if (chat.is_discarded()) return invalid_argument(*args.get("--chat") + ": invalid JSON");
  json messages = chat, tools;
  if (chat.is_object()) {
    messages = chat.value("messages", json::array());
    if (chat.contains("tools")) tools = chat["tools"];
  }
  if (!messages.is_array()) return invalid_argument("--chat: messages must be an array");
  std::string source = tok.chat_template();
  if (auto path = args.get("--template")) {
    SGL_ASSIGN_OR_RETURN(source, read_file(*path));
  }
  if (source.empty())
    return invalid_argument("the tokenizer has no chat template; pass --template");
  SGL_ASSIGN_OR_RETURN(
      std::string text,
      tokenizer::apply_chat_template(source, messages.dump(), tools.is_null() ? "" : tools.dump(),
                                     args.has("--add-generation-prompt"),
                                     tok.bos_token().value_or(""), tok.eos_token().value_or("")));
  // As transformers: the template places special tokens itself.
  json out = {{"text", text}, {"ids", tok.encode(text, {.add_special_tokens = false})}};
  std::cout << dump(out) << "\n";
  return Status::ok_status();
}

Status run_mode(const tokenizer::Tokenizer& tok, const CliArgs& args) {
  const bool special = !args.has("--no-special");
  if (auto text = args.get("--text")) {
    std::cout << dump(encoded(tok, *text, special)) << "\n";
  } else if (auto file = args.get("--text-file")) {
    std::ifstream in(*file);
    if (!in) return not_found("cannot open " + *file);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.empty()) continue;
      const json j = json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_string()) {
        return invalid_argument(*file + ":" + std::to_string(n) + ": expected a JSON string");
      }
      std::cout << dump(encoded(tok, j.get<std::string>(), special)) << "\n";
    }
  } else if (args.has("--decode")) {
    SGL_ASSIGN_OR_RETURN(std::vector<int32_t> ids, args.get_int_list("--decode"));
    std::cout << dump({{"text", tok.decode(ids, {.skip_special_tokens = false})}}) << "\n";
  } else {
    return render_chat(tok, args);
  }
  return Status::ok_status();
}

int run(int argc, char** argv) {
  auto args = CliArgs::parse(
      argc, argv, {"--tokenizer", "--text", "--text-file", "--decode", "--chat", "--template"},
      {"--no-special", "--add-generation-prompt", "--help"});
  const int modes = args.ok() ? args->has("--text") + args->has("--text-file") +
                                    args->has("--decode") + args->has("--chat")
                              : 0;
  if (!args.ok() || args->has("--help") || !args->has("--tokenizer") || modes != 1) {
    if (!args.ok()) std::cerr << "sgl-tokenize: " << args.status().message() << "\n";
    std::cerr << kUsage;
    return 2;
  }
  auto tok = tokenizer::Tokenizer::from_dir(*args->get("--tokenizer"));
  if (!tok.ok()) {
    std::cerr << "sgl-tokenize: " << tok.status().to_string() << "\n";
    return 1;
  }
  if (Status s = run_mode(**tok, *args); !s.ok()) {
    std::cerr << "sgl-tokenize: " << s.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace sgl::app

int main(int argc, char** argv) { return sgl::app::run(argc, argv); }
