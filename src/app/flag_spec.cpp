// Flag tables: parser sets, --help text, refusals and notes.
#include "app/flag_spec.h"

#include <algorithm>

namespace sgl::app {
namespace {

constexpr size_t kHelpWidth = 100;
constexpr size_t kHelpIndent = 8;

// Appends `text` to `out` as words wrapped at kHelpWidth, each line indented by kHelpIndent.
void append_wrapped(std::string& out, std::string_view text) {
  size_t column = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (column == 0) {
      out.append(kHelpIndent, ' ');
      column = kHelpIndent;
    } else if (column + 1 + word.size() > kHelpWidth) {
      out += '\n';
      out.append(kHelpIndent, ' ');
      column = kHelpIndent;
    } else {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
  if (column > 0) out += '\n';
}

std::string quoted_values(const std::vector<std::string_view>& values) {
  std::string out;
  for (std::string_view v : values) out += (out.empty() ? "" : ", ") + std::string(v);
  return out;
}

}  // namespace

FlagSets flag_sets(std::initializer_list<std::span<const FlagSpec>> tables) {
  FlagSets sets;
  for (std::span<const FlagSpec> table : tables) {
    for (const FlagSpec& f : table) {
      (f.value.empty() ? sets.switches : sets.values).insert(std::string(f.name));
      if (f.value.ends_with("...")) sets.multi_values.insert(std::string(f.name));
      for (std::string_view alias : f.aliases) {
        sets.aliases[std::string(alias)] = std::string(f.name);
      }
    }
  }
  return sets;
}

std::string format_flag_help(std::string_view title, std::span<const FlagSpec> table) {
  std::string out = std::string(title) + ":\n";
  for (const FlagSpec& f : table) {
    std::string head = "  " + std::string(f.name);
    for (std::string_view alias : f.aliases) head += ", " + std::string(alias);
    if (!f.value.empty()) head += " " + std::string(f.value);
    out += head + "\n";
    std::string text(f.help);
    if (!f.default_value.empty()) text += " [default: " + std::string(f.default_value) + "]";
    if (f.support == FlagSupport::kNoEffect) text += " No effect: " + std::string(f.note);
    if (f.support == FlagSupport::kRefused) {
      text += " Refused";
      if (!f.accepted_values.empty()) {
        text += " unless " + quoted_values(f.accepted_values);
      }
      text += ": " + std::string(f.note);
    }
    append_wrapped(out, text);
  }
  return out;
}

Status check_flag_support(const CliArgs& args,
                          std::initializer_list<std::span<const FlagSpec>> tables,
                          std::vector<std::string>& notes) {
  for (std::span<const FlagSpec> table : tables) {
    for (const FlagSpec& f : table) {
      const std::string name(f.name);
      if (!args.has(name)) continue;
      if (f.support == FlagSupport::kNoEffect) {
        notes.push_back(name + " has no effect: " + std::string(f.note));
      } else if (f.support == FlagSupport::kRefused) {
        const std::string value = args.get(name).value_or("");
        const bool harmless = std::find(f.accepted_values.begin(), f.accepted_values.end(),
                                        value) != f.accepted_values.end();
        if (harmless) continue;
        return invalid_argument(name + (value.empty() ? "" : " " + value) +
                                " is not supported: " + std::string(f.note));
      }
    }
  }
  return Status::ok_status();
}

}  // namespace sgl::app
