// Model registry.
#include "model/model_registry.h"

namespace sgl::model {

std::vector<std::string> supported_architectures() {
  return {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"};
}

Result<std::unique_ptr<Model>> create_model(const ModelConfig& config, WeightLoader& weights,
                                            Allocator& allocator, const ModelOptions& options) {
  for (const std::string& arch : supported_architectures()) {
    if (arch == config.architecture) {
      // All four differ only by flags the config carries (attention_bias, qk_norm).
      SGL_ASSIGN_OR_RETURN(auto model, LlamaForCausalLM::load(config, weights, allocator, options));
      return std::unique_ptr<Model>(std::move(model));
    }
  }
  std::string list;
  for (const std::string& arch : supported_architectures())
    list += (list.empty() ? "" : ", ") + arch;
  return unimplemented("architecture '" + config.architecture +
                       "' is not supported (supported: " + list + ")");
}

}  // namespace sgl::model
