// --config FILE: YAML flags -> command-line arguments.
#include "app/config_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

namespace sgl::app {

std::optional<std::string> find_config_path(const std::vector<std::string>& args) {
  std::optional<std::string> path;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" && i + 1 < args.size()) path = args[++i];
    if (args[i].rfind("--config=", 0) == 0) path = args[i].substr(9);
  }
  return path;
}

Result<std::vector<std::string>> config_file_args(const std::filesystem::path& path,
                                                  const FlagSets& flags) {
  const std::string file = "--config " + path.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return not_found(file + ": no such file");
  }
  YAML::Node root;
  try {
    root = YAML::LoadFile(path.string());
  } catch (const YAML::Exception& e) {
    return invalid_argument(file + ": not valid YAML: " + e.what());
  }
  if (root.IsNull()) return std::vector<std::string>{};
  if (!root.IsMap()) return invalid_argument(file + ": expected a mapping of flags to values");
  std::vector<std::string> args;
  for (const auto& entry : root) {
    if (!entry.first.IsScalar()) return invalid_argument(file + ": a key is not a flag name");
    std::string name = entry.first.Scalar();
    if (name.rfind("--", 0) == 0) name.erase(0, 2);
    std::replace(name.begin(), name.end(), '_', '-');
    std::string flag = "--" + name;
    if (auto alias = flags.aliases.find(flag); alias != flags.aliases.end()) flag = alias->second;
    const std::string where = file + ": '" + entry.first.Scalar() + "'";
    if (flag == "--config") return invalid_argument(where + ": a config file cannot name another");
    const YAML::Node& value = entry.second;
    if (!value.IsScalar()) {
      return invalid_argument(where + " needs a single value (lists and mappings are not flags)");
    }
    if (flags.switches.count(flag)) {
      bool on = false;
      if (!YAML::convert<bool>::decode(value, on)) {
        return invalid_argument(where + " is a switch: true or false, got '" + value.Scalar() +
                                "'");
      }
      if (on) args.push_back(flag);
    } else if (flags.values.count(flag)) {
      args.push_back(flag);
      args.push_back(value.Scalar());
    } else {
      return invalid_argument(where + " is not a flag of this server (see --help)");
    }
  }
  return args;
}

}  // namespace sgl::app
