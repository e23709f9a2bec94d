// Completion templates: the built-in ones, JSON files, the fill-in-the-middle prompt.
#include "server/completion_template.h"

#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace sgl::server {
namespace {

const std::array<CompletionTemplate, 3>& builtin_templates() {
  static const std::array<CompletionTemplate, 3> kTemplates = {{
      {"deepseek_coder", "<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>", true},
      {"star_coder", "<fim_prefix>", "<fim_middle>", "<fim_suffix>", false},
      {"qwen_coder", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", false},
  }};
  return kTemplates;
}

}  // namespace

Result<CompletionTemplate> load_completion_template(const std::string& name_or_path) {
  for (const CompletionTemplate& t : builtin_templates()) {
    if (t.name == name_or_path) return t;
  }
  std::ifstream in(name_or_path);
  if (!in) {
    return invalid_argument("--completion-template " + name_or_path +
                            " is not a built-in template name (deepseek_coder, star_coder, "
                            "qwen_coder) or a valid completion template file path");
  }
  if (!name_or_path.ends_with(".json")) {
    return invalid_argument("--completion-template " + name_or_path +
                            ": unrecognized format of completion template file (a .json file)");
  }
  std::stringstream text;
  text << in.rdbuf();
  const auto o = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!o.is_object()) {
    return invalid_argument("--completion-template " + name_or_path + " is not a JSON object");
  }
  CompletionTemplate t;
  for (auto [key, out] :
       {std::pair{"name", &t.name}, std::pair{"fim_begin_token", &t.fim_begin_token},
        std::pair{"fim_middle_token", &t.fim_middle_token},
        std::pair{"fim_end_token", &t.fim_end_token}}) {
    const auto it = o.find(key);
    if (it == o.end() || !it->is_string()) {
      return invalid_argument("--completion-template " + name_or_path + ": '" + key +
                              "' must be a string");
    }
    *out = it->get<std::string>();
  }
  const auto position = o.find("fim_position");
  if (position == o.end() || (*position != "MIDDLE" && *position != "END")) {
    return invalid_argument("--completion-template " + name_or_path +
                            ": Unknown fim position (fim_position must be MIDDLE or END)");
  }
  t.middle_in_the_middle = *position == "MIDDLE";
  return t;
}

std::string fill_in_the_middle(const CompletionTemplate& t, std::string_view prompt,
                               std::string_view suffix) {
  const std::string& second = t.middle_in_the_middle ? t.fim_middle_token : t.fim_end_token;
  const std::string& last = t.middle_in_the_middle ? t.fim_end_token : t.fim_middle_token;
  std::string out = t.fim_begin_token;
  out += prompt;
  out += second;
  out += suffix;
  out += last;
  return out;
}

}  // namespace sgl::server
