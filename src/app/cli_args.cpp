// Command-line parsing with clear errors for unknown flags and bad numbers.
#include "app/cli_args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace sgl::app {

Result<CliArgs> CliArgs::parse(int argc, char** argv, const FlagSets& flags) {
  return parse(std::vector<std::string>(argv + std::min(argc, 1), argv + argc), flags);
}

Result<CliArgs> CliArgs::parse(const std::vector<std::string>& argv, const FlagSets& flags) {
  CliArgs args;
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) return invalid_argument("unexpected argument '" + arg + "'");
    std::optional<std::string> inline_value;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (auto alias = flags.aliases.find(arg); alias != flags.aliases.end()) arg = alias->second;
    if (flags.switches.count(arg)) {
      if (inline_value) return invalid_argument(arg + " takes no value");
      args.values_[arg] = "";
    } else if (flags.values.count(arg)) {
      if (inline_value) {
        args.values_[arg] = *inline_value;
      } else if (i + 1 < argv.size()) {
        std::string value = argv[++i];
        while (flags.multi_values.count(arg) && i + 1 < argv.size() &&
               argv[i + 1].rfind("--", 0) != 0) {
          value += " " + argv[++i];
        }
        args.values_[arg] = std::move(value);
      } else {
        return invalid_argument(arg + " needs a value");
      }
    } else {
      return invalid_argument("unknown flag '" + arg + "' (see --help)");
    }
  }
  return args;
}

std::optional<std::string> CliArgs::get(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

Result<double> CliArgs::get_double(const std::string& flag, double fallback) const {
  auto v = get(flag);
  if (!v) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v->c_str(), &end);
  // (inf and nan parse, and no flag means them: a timeout of inf would overflow its ms.)
  if (v->empty() || end != v->c_str() + v->size() || !std::isfinite(d)) {
    return invalid_argument(flag + " expects a finite number, got '" + *v + "'");
  }
  return d;
}

Result<int64_t> CliArgs::get_int(const std::string& flag, int64_t fallback) const {
  auto v = get(flag);
  if (!v) return fallback;
  int64_t out = 0;
  auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || ptr != v->data() + v->size()) {
    return invalid_argument(flag + " expects an integer, got '" + *v + "'");
  }
  return out;
}

Result<std::vector<int32_t>> CliArgs::get_int_list(const std::string& flag) const {
  std::vector<int32_t> out;
  auto v = get(flag);
  if (!v) return out;
  size_t start = 0;
  while (start <= v->size()) {
    size_t comma = v->find(',', start);
    if (comma == std::string::npos) comma = v->size();
    const std::string item = v->substr(start, comma - start);
    int32_t x = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), x);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size()) {
      return invalid_argument(flag + " expects comma-separated integers, got '" + *v + "'");
    }
    out.push_back(x);
    start = comma + 1;
  }
  return out;
}

}  // namespace sgl::app
