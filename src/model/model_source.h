// ModelSource: a model path (Hugging Face directory or .gguf file) opened into config + weights.
#pragma once

#include <filesystem>
#include <memory>

#include "core/status.h"
#include "model/model_config.h"
#include "model/weight_source.h"

namespace sgl::model {

enum class ModelFormat {
  kHuggingFace,  // a directory: config.json (+ generation_config.json) and safetensors
  kGguf,         // one .gguf file: config from its metadata, weights from its tensors
};

struct ModelSourceOptions {
  // false: config only (--load-format dummy); `weights` stays null and a Hugging Face directory
  // needs no safetensors.
  bool open_weights = true;
};

struct ModelSource {
  ModelFormat format = ModelFormat::kHuggingFace;
  std::filesystem::path path;
  ModelConfig config;
  std::unique_ptr<WeightSource> weights;  // null when opened with open_weights = false
};

// Opens `path`: a file starting with the GGUF magic is a GGUF model; a directory is a Hugging
// Face model. Errors name the path.
Result<ModelSource> open_model_source(const std::filesystem::path& path,
                                      const ModelSourceOptions& options = {});

}  // namespace sgl::model
