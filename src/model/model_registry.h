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
// The checking half of create_model: every tensor checked, nothing read or allocated; the memory
// the model would take. Unimplemented as create_model.
Result<ModelMemoryPlan> plan_model(const ModelConfig& config, WeightLoader& weights,
                                   const ModelOptions& options);

}  // namespace sgl::model
