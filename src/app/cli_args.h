// CliArgs: a small `--flag value` / `--flag=value` / `--switch` parser for the sgl-* tools.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace sgl::app {

class CliArgs {
 public:
  // `value_flags` take a value; `switch_flags` do not. Unknown flags are an error.
  static Result<CliArgs> parse(int argc, char** argv, const std::set<std::string>& value_flags,
                               const std::set<std::string>& switch_flags);

  bool has(const std::string& flag) const { return values_.count(flag) > 0; }
  std::optional<std::string> get(const std::string& flag) const;
  Result<double> get_double(const std::string& flag, double fallback) const;
  Result<int64_t> get_int(const std::string& flag, int64_t fallback) const;
  // Comma-separated integers ("1,2,3").
  Result<std::vector<int32_t>> get_int_list(const std::string& flag) const;

 private:
  std::map<std::string, std::string> values_;  // switches map to ""
};

}  // namespace sgl::app
