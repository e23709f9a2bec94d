// SGLang's --config FILE: a YAML mapping of launch flags to values, read as command-line
// arguments that the command line itself overrides.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/cli_args.h"
#include "core/status.h"

namespace sgl::app {

// The value of --config in `args` (as "--config FILE" or "--config=FILE"), if given.
std::optional<std::string> find_config_path(const std::vector<std::string>& args);

// Reads `path`: a YAML mapping whose keys are flag names of `flags` (with or without "--",
// "_" or "-" between words: "model-path", "model_path", "tp") and whose values are scalars;
// switches take true (given) or false (left out). Returns "--name value" / "--switch" arguments
// in the file's order. Errors name the file and the key: unknown flags, lists or maps as
// values, a switch with a value other than true / false, a nested --config, YAML syntax.
Result<std::vector<std::string>> config_file_args(const std::filesystem::path& path,
                                                  const FlagSets& flags);

}  // namespace sgl::app
