// Model registry: architecture name (config.json "architectures") -> implementation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/llama.h"
#include "model/model.h"

namespace sgl::model {

// Architectures create_model accepts.
std::vector<std::string> supported_architectures();

Result<std::unique_ptr<Model>> create_model(const ModelConfig& config, WeightLoader& weights,
                                            Allocator& allocator, const ModelOptions& options);

}  // namespace sgl::model
