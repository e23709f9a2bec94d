// read_function_tools.
#include "function_call/function_tools.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/ordered_json.h"

namespace sgl::function_call {
namespace {

using json = nlohmann::ordered_json;  // keeps the schemas' property order

bool valid_name(const std::string& name) {
  // OpenAI: a-z, A-Z, 0-9, underscores and dashes, at most 64 characters; dots are allowed
  // too (harmony's namespaces).
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

}  // namespace

Result<std::vector<FunctionTool>> read_function_tools(std::string_view tools_json) {
  auto parsed = parse_ordered_json(tools_json);
  if (!parsed.ok() || !parsed->is_array()) return invalid_argument("'tools' must be a list");
  const json& tools = *parsed;
  if (tools.size() > kMaxFunctionTools) {
    return invalid_argument("'tools' may hold at most " + std::to_string(kMaxFunctionTools) +
                            " functions");
  }
  std::vector<FunctionTool> out;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string where = "tools[" + std::to_string(i) + "]";
    const json& t = tools[i];
    if (!t.is_object()) return invalid_argument(where + " must be an object");
    const auto type = t.find("type");
    if (type == t.end() || *type != "function") {
      return invalid_argument(where + ".type must be 'function' (other tool types are not " +
                              "supported)");
    }
    // The chat format nests the function; the Responses format does not.
    const auto nested = t.find("function");
    const json& f = nested != t.end() ? *nested : t;
    const std::string fwhere = nested != t.end() ? where + ".function" : where;
    if (!f.is_object()) return invalid_argument(fwhere + " must be an object");
    const auto name = f.find("name");
    if (name == f.end() || !name->is_string() || !valid_name(name->get<std::string>())) {
      return invalid_argument(fwhere +
                              ".name must be a string of letters, digits, '_', '-' or '.' (at "
                              "most 64)");
    }
    FunctionTool tool{name->get<std::string>(), ""};
    if (std::any_of(out.begin(), out.end(), [&](const auto& o) { return o.name == tool.name; })) {
      return invalid_argument(fwhere + ".name '" + tool.name + "' is given twice");
    }
    if (const auto params = f.find("parameters"); params != f.end() && !params->is_null()) {
      if (!params->is_object()) return invalid_argument(fwhere + ".parameters must be an object");
      tool.parameters_json = params->dump();
    }
    if (const auto strict = f.find("strict"); strict != f.end() && !strict->is_null()) {
      if (!strict->is_boolean()) return invalid_argument(fwhere + ".strict must be a boolean");
      tool.strict = strict->get<bool>();
    }
    out.push_back(std::move(tool));
  }
  return out;
}

std::shared_ptr<const ToolNames> tool_names(std::span<const FunctionTool> tools) {
  auto names = std::make_shared<ToolNames>();
  for (const FunctionTool& t : tools) names->push_back(t.name);
  return names;
}

bool names_allow(const ToolNames* names, std::string_view name) {
  return names == nullptr || std::find(names->begin(), names->end(), name) != names->end();
}

}  // namespace sgl::function_call
