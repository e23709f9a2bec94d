// Model registry: create_model through the architecture table.
#include "model/model_registry.h"

#include "model/architectures.h"

namespace sgl::model {

Result<std::unique_ptr<Model>> create_model(const ModelConfig& config, WeightLoader& weights,
                                            Allocator& allocator, const ModelOptions& options) {
  const Architecture* arch = find_architecture(config.architecture);
  if (arch != nullptr && arch->supported()) {
    return arch->factory(config, weights, allocator, options);
  }
  return unimplemented("architecture '" + config.architecture +
                       "' is not supported (supported: " + supported_architecture_names() + ")");
}

}  // namespace sgl::model
