// Model registry: config.architecture -> the implementation the architecture table names.
#pragma once

#include <memory>

#include "core/allocator.h"
#include "model/model.h"
#include "model/weight_loader.h"

namespace sgl::model {

// The architecture's factory (architectures.h); Unimplemented, listing the supported
// architectures, for one the table does not support.
Result<std::unique_ptr<Model>> create_model(const ModelConfig& config, WeightLoader& weights,
                                            Allocator& allocator, const ModelOptions& options);

}  // namespace sgl::model
