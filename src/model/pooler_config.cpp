// sentence-transformers' modules.json and Pooling config -> PoolerConfig.
#include "model/pooler_config.h"

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <system_error>

#include "core/json_nesting.h"
#include "model/mapped_file.h"

namespace sgl::model {
namespace {

using Json = nlohmann::json;

// modules.json and the Pooling config are a few hundred bytes.
constexpr uint64_t kMaxFileBytes = 1ull << 20;

constexpr std::string_view kModulePackage = "sentence_transformers.models.";

Result<Json> read_json(const std::filesystem::path& path) {
  SGL_ASSIGN_OR_RETURN(const std::string text, read_small_file(path, kMaxFileBytes));
  if (Status s = check_json_nesting(text); !s.ok()) {
    return invalid_argument(path.string() + ": " + s.message());
  }
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    return invalid_argument(path.string() + ": malformed JSON: " + e.what());
  }
}

// The Pooling module's config.json: exactly one of the modes sgl.cpp computes.
Result<PoolingType> read_pooling_mode(const std::filesystem::path& path, int64_t hidden_size) {
  SGL_ASSIGN_OR_RETURN(const Json config, read_json(path));
  if (!config.is_object()) return invalid_argument(path.string() + ": must be a JSON object");
  // A boolean field; `absent` when missing or null.
  auto flag = [&](const char* key, bool absent) -> Result<bool> {
    const auto it = config.find(key);
    if (it == config.end() || it->is_null()) return absent;
    if (!it->is_boolean()) {
      return invalid_argument(path.string() + ": '" + key + "' must be a boolean");
    }
    return it->get<bool>();
  };
  if (const auto it = config.find("word_embedding_dimension"); it != config.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() != hidden_size) {
      return invalid_argument(path.string() + ": word_embedding_dimension " + it->dump() +
                              " is not the model's hidden_size " + std::to_string(hidden_size));
    }
  }
  SGL_ASSIGN_OR_RETURN(const bool include_prompt, flag("include_prompt", true));
  if (!include_prompt) {
    return unimplemented(path.string() +
                         ": include_prompt false (pooling that leaves out an instruction prompt) "
                         "is not supported");
  }
  struct Mode {
    const char* key;
    PoolingType type;  // kNone: a mode sgl.cpp does not compute
  };
  constexpr Mode kModes[] = {
      {"pooling_mode_lasttoken", PoolingType::kLast},
      {"pooling_mode_mean_tokens", PoolingType::kMean},
      {"pooling_mode_cls_token", PoolingType::kNone},
      {"pooling_mode_max_tokens", PoolingType::kNone},
      {"pooling_mode_mean_sqrt_len_tokens", PoolingType::kNone},
      {"pooling_mode_weightedmean_tokens", PoolingType::kNone},
  };
  std::string chosen;
  PoolingType type = PoolingType::kNone;
  for (const Mode& m : kModes) {
    SGL_ASSIGN_OR_RETURN(const bool on, flag(m.key, false));
    if (!on) continue;
    if (!chosen.empty()) {
      return unimplemented(path.string() + ": " + chosen + " and " + m.key +
                           " together (concatenated poolings) are not supported");
    }
    chosen = m.key;
    type = m.type;
  }
  if (chosen.empty()) return invalid_argument(path.string() + ": no pooling_mode_* is true");
  if (type == PoolingType::kNone) {
    return unimplemented(path.string() + ": " + chosen +
                         " is not supported (last-token and mean pooling are)");
  }
  return type;
}

}  // namespace

Result<PoolerConfig> read_pooler_config(const std::filesystem::path& model_path,
                                        int64_t hidden_size) {
  const PoolerConfig fallback{PoolingType::kLast, true};
  std::error_code ec;
  if (!std::filesystem::is_directory(model_path, ec)) return fallback;  // a .gguf file
  const std::filesystem::path modules_path = model_path / "modules.json";
  if (!std::filesystem::exists(modules_path, ec)) return fallback;
  SGL_ASSIGN_OR_RETURN(const Json modules, read_json(modules_path));
  const std::string where = modules_path.string();
  if (!modules.is_array() || modules.empty()) {
    return invalid_argument(where + ": must be a non-empty list of modules");
  }
  PoolerConfig config;
  for (size_t i = 0; i < modules.size(); ++i) {
    const Json& m = modules[i];
    const std::string at = where + ": module " + std::to_string(i);
    const auto type_it = m.is_object() ? m.find("type") : m.end();
    if (!m.is_object() || type_it == m.end() || !type_it->is_string()) {
      return invalid_argument(at + " must be an object with a string 'type'");
    }
    const std::string& type = type_it->get_ref<const std::string&>();
    const std::string name = type.compare(0, kModulePackage.size(), kModulePackage) == 0
                                 ? type.substr(kModulePackage.size())
                                 : type;
    if (i == 0) {
      if (name != "Transformer") {
        return unimplemented(at + " is '" + type + "'; the first module must be the Transformer");
      }
    } else if (name == "Pooling" && !config.is_embedding()) {
      const auto path_it = m.find("path");
      if (path_it == m.end() || !path_it->is_string()) {
        return invalid_argument(at + " (Pooling) needs a string 'path'");
      }
      // Model files are untrusted: the module's folder must stay inside the model directory.
      const std::filesystem::path dir(path_it->get<std::string>());
      for (const auto& part : dir) {
        if (part == "..")
          return invalid_argument(at + " path '" + dir.string() + "' leaves the model directory");
      }
      if (dir.is_absolute()) {
        return invalid_argument(at + " path '" + dir.string() + "' must be relative");
      }
      SGL_ASSIGN_OR_RETURN(config.type,
                           read_pooling_mode(model_path / dir / "config.json", hidden_size));
    } else if (name == "Normalize" && config.is_embedding() && !config.normalize) {
      config.normalize = true;
    } else {
      return unimplemented(at + " ('" + type +
                           "') is not supported: after the Transformer, sgl.cpp runs one Pooling "
                           "module and then, optionally, Normalize");
    }
  }
  if (!config.is_embedding()) {
    return unimplemented(where + " has no Pooling module (token embeddings are not supported)");
  }
  return config;
}

}  // namespace sgl::model
