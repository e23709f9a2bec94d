// Model registry: create_model and plan_model through the architecture table.
#include "model/model_registry.h"

#include "model/architectures.h"

namespace sgl::model {

namespace {

// The table's factory for the config's architecture; Unimplemented naming the supported ones.
Result<const ModelFactory*> factory_of(const ModelConfig& config) {
  const Architecture* arch = find_architecture(config.architecture);
  if (arch != nullptr && arch->supported()) return arch->factory;
  if (arch != nullptr && arch->draft != DraftKind::kNone) {
    return unimplemented("architecture '" + config.architecture +
                         "' is an EAGLE draft head, not a model to serve on its own");
  }
  return unimplemented("architecture '" + config.architecture +
                       "' is not supported (supported: " + supported_architecture_names() + ")");
}

}  // namespace

Result<std::unique_ptr<Model>> create_model(const ModelConfig& config, WeightLoader& weights,
                                            Allocator& allocator, const ModelOptions& options) {
  SGL_ASSIGN_OR_RETURN(const ModelFactory* factory, factory_of(config));
  return factory->load(config, weights, allocator, options);
}

Result<ModelMemoryPlan> plan_model(const ModelConfig& config, WeightLoader& weights,
                                   const ModelOptions& options) {
  SGL_ASSIGN_OR_RETURN(const ModelFactory* factory, factory_of(config));
  return factory->plan(config, weights, options);
}

}  // namespace sgl::model
