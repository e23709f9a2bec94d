// CliArgs: a small `--flag value` / `--flag=value` / `--switch` parser for the sgl-* tools.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace sgl::app {

// The flags a tool knows: `values` take a value, `switches` do not; `aliases` maps other names
// to one of those ("--tp" -> "--tp-size").
struct FlagSets {
  std::set<std::string> values;
  std::set<std::string> switches;
  std::map<std::string, std::string> aliases;
  // Value flags that take one or more values (SGLang's nargs="+": `--cuda-graph-bs 1 2 4`),
  // stored joined by spaces.
  std::set<std::string> multi_values;
};

class CliArgs {
 public:
  // `--flag value`, `--flag=value` and `--switch`, under their own names or aliases (stored under
  // the name). Unknown flags are an error. A flag given twice keeps its last value, so arguments
  // appended after others (the command line after a --config file's) override them.
  static Result<CliArgs> parse(const std::vector<std::string>& args, const FlagSets& flags);
  static Result<CliArgs> parse(int argc, char** argv, const FlagSets& flags);
  static Result<CliArgs> parse(int argc, char** argv, const std::set<std::string>& value_flags,
                               const std::set<std::string>& switch_flags) {
    return parse(argc, argv, FlagSets{value_flags, switch_flags, {}, {}});
  }

  bool has(const std::string& flag) const { return values_.count(flag) > 0; }
  std::optional<std::string> get(const std::string& flag) const;
  Result<double> get_double(const std::string& flag, double fallback) const;
  Result<int64_t> get_int(const std::string& flag, int64_t fallback) const;
  // An integer, or one with SGLang's size suffixes (case-sensitive): SI k / M / G / T (decimals
  // allowed, the product truncated: "25.6k" is 25600) or IEC Ki / Mi / Gi / Ti (integers only).
  Result<int64_t> get_human_int(const std::string& flag, int64_t fallback) const;
  // Integers, comma-separated ("1,2,3") or a multi-value flag's (`--flag 1 2 3`); empty when
  // absent.
  Result<std::vector<int32_t>> get_int_list(const std::string& flag) const;
  // A multi-value flag's numbers (`--flag 0.1 0.5 1`, or comma-separated); empty when absent.
  Result<std::vector<double>> get_double_list(const std::string& flag) const;
  // A multi-value flag's values split at spaces and commas, empty ones dropped; empty when
  // absent.
  std::vector<std::string> get_list(const std::string& flag) const;

 private:
  std::map<std::string, std::string> values_;  // switches map to ""
};

}  // namespace sgl::app
