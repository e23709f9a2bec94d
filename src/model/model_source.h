// ModelSource: a model path (Hugging Face directory or .gguf file) opened into config + weights.
#pragma once

#include <filesystem>
#include <memory>
#include <string_view>

#include "core/status.h"
#include "model/model_config.h"
#include "model/weight_source.h"

namespace sgl::model {

enum class ModelFormat {
  kHuggingFace,  // a directory: config.json (+ generation_config.json) and safetensors
  kGguf,         // one .gguf file: config from its metadata, weights from its tensors
  kConfigFile,   // a bare config.json-style *.json file: config only (--load-format dummy)
};

// What `path` holds, from its type, its directory listing or its first four bytes; nothing else
// is read. The apps call it before anything else opens the path, so that a bad path is reported
// as such (not as, say, a missing tokenizer). Errors:
//   NotFound         "no such file or directory: PATH"
//   InvalidArgument  "not a regular file: PATH (...)" for FIFOs, devices, sockets, and a
//                    directory named like a GGUF file
//   NotFound         "PATH: not a model directory: it has no config.json ..."
//   InvalidArgument  "PATH: not a GGUF file (...)" for a file that is neither GGUF nor *.json
Result<ModelFormat> check_model_path(const std::filesystem::path& path);

// Whether `path` reads like a Hugging Face repo id ("Qwen/Qwen3-8B": one slash between plain
// names), so that a missing path can say how to download it.
bool looks_like_hub_repo_id(std::string_view path);

struct ModelSourceOptions {
  // false: config only (--load-format dummy); `weights` stays null and a Hugging Face directory
  // needs no safetensors.
  bool open_weights = true;
  // A JSON object replacing config.json's top-level fields (--json-model-override-args); empty:
  // none. A GGUF model refuses it.
  std::string config_overrides;
};

struct ModelSource {
  ModelFormat format = ModelFormat::kHuggingFace;
  std::filesystem::path path;
  ModelConfig config;
  std::unique_ptr<WeightSource> weights;  // null when opened with open_weights = false
};

// Opens `path` (check_model_path says how): a file starting with the GGUF magic is a GGUF model;
// a directory is a Hugging Face model. Errors name the path.
Result<ModelSource> open_model_source(const std::filesystem::path& path,
                                      const ModelSourceOptions& options = {});

}  // namespace sgl::model
