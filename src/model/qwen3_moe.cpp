// Qwen3MoeForCausalLM: each layer's MLP, as transformers' Qwen3MoeDecoderLayer picks it.
#include "model/qwen3_moe.h"

namespace sgl::model {

Mlp Qwen3MoeForCausalLM::mlp_for_layer(int64_t layer) const {
  const ModelConfig& c = config();
  if (!c.is_sparse_layer(layer)) return DenseMlp(c.hidden_size, c.intermediate_size, tp());
  // mlp.{gate, experts.E.*_proj}; top-k renormalized iff norm_topk_prob (true in the releases).
  return MoeMlp(moe_shape(c, {}, tp(), ep_size(), ep_dispatch()));
}

}  // namespace sgl::model
