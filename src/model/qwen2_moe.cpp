// Qwen2MoeForCausalLM: each layer's MLP, as transformers' Qwen2MoeDecoderLayer picks it.
#include "model/qwen2_moe.h"

#include <utility>

namespace sgl::model {

Mlp Qwen2MoeForCausalLM::mlp_for_layer(int64_t layer) const {
  const ModelConfig& c = config();
  if (!c.is_sparse_layer(layer)) return DenseMlp(c.hidden_size, c.intermediate_size, tp());
  // mlp.{gate, experts.E.*_proj}; top-k renormalized iff norm_topk_prob (false in the releases).
  MoeShape shape = moe_shape(c, {}, tp(), ep_size(), ep_dispatch());
  // mlp.shared_expert.*, scaled by sigmoid(mlp.shared_expert_gate).
  shape.shared_intermediate_size = c.shared_expert_intermediate_size;
  return MoeMlp(std::move(shape));
}

}  // namespace sgl::model
