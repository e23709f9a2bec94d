// LlamaForCausalLM: every layer's MLP.
#include "model/llama.h"

namespace sgl::model {

Mlp LlamaForCausalLM::mlp_for_layer(int64_t /*layer*/) const {
  return DenseMlp(config().hidden_size, config().intermediate_size, tp());
}

}  // namespace sgl::model
