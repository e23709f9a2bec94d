// --config FILE: YAML flags -> command-line arguments.
#include "app/config_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

namespace sgl::app {
namespace {

// A YAML value as the JSON Python's json.dumps writes of what PyYAML reads (SGLang passes a
// mapping's value to its flag that way): plain scalars typed (null, booleans, numbers), quoted
// ones strings.
nlohmann::json yaml_to_json(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& entry : node) out[entry.first.Scalar()] = yaml_to_json(entry.second);
    return out;
  }
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) out.push_back(yaml_to_json(item));
    return out;
  }
  if (!node.IsScalar()) return nullptr;
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return nullptr;
  }
  bool b = false;
  if (YAML::convert<bool>::decode(node, b)) return b;
  int64_t i = 0;
  if (YAML::convert<int64_t>::decode(node, i)) return i;
  double d = 0;
  if (YAML::convert<double>::decode(node, d) && std::isfinite(d)) return d;
  return text;
}

}  // namespace

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
    if (value.IsMap() && flags.values.count(flag)) {  // a JSON flag's object, written as YAML
      args.push_back(flag + "=" + yaml_to_json(value).dump());
      continue;
    }
    if (value.IsSequence() && flags.multi_values.count(flag)) {  // `cuda-graph-bs: [1, 2, 4]`
      std::string joined;
      for (const auto& item : value) {
        if (!item.IsScalar()) return invalid_argument(where + ": list items must be values");
        joined += (joined.empty() ? "" : " ") + item.Scalar();
      }
      if (!joined.empty()) args.push_back(flag + "=" + joined);
      continue;
    }
    if (!value.IsScalar()) {
      return invalid_argument(where + " needs a single value" +
                              (value.IsSequence() ? " (it takes one, not a list)" : ""));
    }
    if (flags.switches.count(flag)) {
      bool on = false;
      if (!YAML::convert<bool>::decode(value, on)) {
        return invalid_argument(where + " is a switch: true or false, got '" + value.Scalar() +
                                "'");
      }
      if (on) args.push_back(flag);
    } else if (flags.values.count(flag)) {
      args.push_back(flag + "=" + value.Scalar());  // one argument: a value may start with "--"
    } else {
      return invalid_argument(where + " is not a flag of this server (see --help)");
    }
  }
  return args;
}

}  // namespace sgl::app
