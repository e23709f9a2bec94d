// MixtralForCausalLM: every layer's sparse block.
#include "model/mixtral.h"

#include <utility>

namespace sgl::model {

Mlp MixtralForCausalLM::mlp_for_layer(int64_t /*layer*/) const {
  MoeShape shape = moe_shape(
      config(),
      {.block = "block_sparse_moe.", .gate_proj = "w1", .up_proj = "w3", .down_proj = "w2"}, tp(),
      ep_size(), ep_dispatch());
  // transformers' Mixtral always renormalizes the top-k weights; its config has no
  // norm_topk_prob.
  shape.renormalize = true;
  return MoeMlp(std::move(shape));
}

}  // namespace sgl::model
