// Command-line parsing with clear errors for unknown flags and bad numbers.
#include "app/cli_args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

namespace sgl::app {

Result<CliArgs> CliArgs::parse(int argc, char** argv, const FlagSets& flags) {
  return parse(std::vector<std::string>(argv + std::min(argc, 1), argv + argc), flags);
}

namespace {

bool is_flag(const std::string& arg) { return arg.rfind("--", 0) == 0; }

// `arg` as the flag it names: itself, the flag it is an alias of, or, as Python's argparse
// reads an abbreviation, the one flag it is a prefix of (`--mem-frac`). Empty when unknown.
Result<std::string> resolve_flag(const std::string& arg, const FlagSets& flags) {
  auto target = [&](const std::string& name) {
    auto alias = flags.aliases.find(name);
    return alias == flags.aliases.end() ? name : alias->second;
  };
  if (flags.switches.count(arg) || flags.values.count(arg) || flags.aliases.count(arg)) {
    return target(arg);
  }
  std::set<std::string> matches;  // the flags (not aliases) that names starting with arg mean
  std::string listed;
  for (const auto* names : {&flags.switches, &flags.values}) {
    for (const std::string& name : *names) {
      if (name.rfind(arg, 0) == 0 && matches.insert(name).second) listed += " " + name;
    }
  }
  for (const auto& [alias, name] : flags.aliases) {
    if (alias.rfind(arg, 0) == 0 && matches.insert(name).second) listed += " " + name;
  }
  if (matches.size() > 1) {
    return invalid_argument("ambiguous flag '" + arg + "': it could be any of" + listed);
  }
  return matches.empty() ? std::string() : *matches.begin();
}

}  // namespace

Result<CliArgs> CliArgs::parse(const std::vector<std::string>& argv, const FlagSets& flags) {
  CliArgs args;
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string arg = argv[i];
    if (!is_flag(arg)) return invalid_argument("unexpected argument '" + arg + "'");
    std::optional<std::string> inline_value;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    SGL_ASSIGN_OR_RETURN(const std::string flag, resolve_flag(arg, flags));
    if (flag.empty()) return invalid_argument("unknown flag '" + arg + "' (see --help)");
    if (flags.switches.count(flag)) {
      if (inline_value) return invalid_argument(flag + " takes no value");
      args.values_[flag] = "";
      continue;
    }
    if (inline_value) {
      args.values_[flag] = *inline_value;
      continue;
    }
    // A flag next is not this one's value (argparse's rule): `--api-key $EMPTY --x` must not
    // start with the key "--x". `--flag=--value` passes one that starts with dashes.
    if (i + 1 >= argv.size() || is_flag(argv[i + 1])) {
      return invalid_argument(flag + " needs a value" +
                              (i + 1 < argv.size() ? ", got the flag " + argv[i + 1] : ""));
    }
    std::string value = argv[++i];
    while (flags.multi_values.count(flag) && i + 1 < argv.size() && !is_flag(argv[i + 1])) {
      value += " " + argv[++i];
    }
    args.values_[flag] = std::move(value);
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

Result<int64_t> CliArgs::get_human_int(const std::string& flag, int64_t fallback) const {
  auto v = get(flag);
  if (!v) return fallback;
  struct Suffix {
    std::string_view name;
    int64_t multiplier;
    bool decimals;
  };
  // IEC first: "Ki" must not be read as "K" (not a suffix) or as a number ending in "i".
  static constexpr Suffix kSuffixes[] = {{"Ki", int64_t{1} << 10, false},
                                         {"Mi", int64_t{1} << 20, false},
                                         {"Gi", int64_t{1} << 30, false},
                                         {"Ti", int64_t{1} << 40, false},
                                         {"k", 1'000, true},
                                         {"M", 1'000'000, true},
                                         {"G", 1'000'000'000, true},
                                         {"T", 1'000'000'000'000, true}};
  const std::string_view text(*v);
  const Status bad = invalid_argument(
      flag +
      " expects an integer, optionally with a suffix (1k, 1M, 1Ki, 1Mi; case-sensitive), "
      "got '" +
      *v + "'");
  for (const Suffix& suffix : kSuffixes) {
    if (text.size() <= suffix.name.size() || !text.ends_with(suffix.name)) continue;
    const std::string_view number = text.substr(0, text.size() - suffix.name.size());
    const size_t dot = number.find('.');
    const std::string_view whole = number.substr(0, dot);
    const std::string_view fraction =
        dot == std::string_view::npos ? std::string_view() : number.substr(dot + 1);
    auto digits = [](std::string_view d) {
      return !d.empty() && d.find_first_not_of("0123456789") == std::string_view::npos;
    };
    if (!digits(whole) || (dot != std::string_view::npos && !digits(fraction))) return bad;
    if (dot != std::string_view::npos && !suffix.decimals) {
      return invalid_argument(flag + " '" + *v + "': decimals are not allowed with IEC suffixes");
    }
    // The fraction's digits past the multiplier's add less than one: dropped (SI multipliers
    // are powers of ten, so multiplier / scale is exact).
    int64_t part = 0, scale = 1;
    for (size_t i = 0; i < fraction.size() && scale < suffix.multiplier; ++i) {
      part = part * 10 + (fraction[i] - '0');
      scale *= 10;
    }
    part *= suffix.multiplier / scale;
    int64_t units = 0;
    if (std::from_chars(whole.data(), whole.data() + whole.size(), units).ec != std::errc() ||
        units > (std::numeric_limits<int64_t>::max() - part) / suffix.multiplier) {
      return invalid_argument(flag + " '" + *v + "' is too large");
    }
    return units * suffix.multiplier + part;
  }
  int64_t out = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc() || ptr != text.data() + text.size()) return bad;
  return out;
}

Result<std::vector<int32_t>> CliArgs::get_int_list(const std::string& flag) const {
  std::vector<int32_t> out;
  auto v = get(flag);
  if (!v) return out;
  std::string text = *v;  // a multi-value flag's values come joined by spaces
  std::replace(text.begin(), text.end(), ' ', ',');
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    int32_t x = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), x);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size()) {
      return invalid_argument(flag + " expects integers, comma- or space-separated, got '" + *v +
                              "'");
    }
    out.push_back(x);
    start = comma + 1;
  }
  return out;
}

Result<std::vector<double>> CliArgs::get_double_list(const std::string& flag) const {
  std::vector<double> out;
  for (const std::string& item : get_list(flag)) {
    double x = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), x);
    if (ec != std::errc() || ptr != item.data() + item.size()) {
      return invalid_argument(flag + " expects numbers, got '" + *get(flag) + "'");
    }
    out.push_back(x);
  }
  return out;
}

std::vector<std::string> CliArgs::get_list(const std::string& flag) const {
  std::vector<std::string> out;
  const auto v = get(flag);
  if (!v) return out;
  std::string item;
  for (size_t i = 0; i <= v->size(); ++i) {
    if (i < v->size() && (*v)[i] != ' ' && (*v)[i] != ',') {
      item += (*v)[i];
    } else if (!item.empty()) {
      out.push_back(std::move(item));
      item.clear();
    }
  }
  return out;
}

}  // namespace sgl::app
