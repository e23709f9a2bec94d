// Qwen2MoeForCausalLM: the decoder (with q/k/v biases) whose sparse layers run routed experts
// plus a shared expert scaled by a sigmoid gate; the layers decoder_sparse_step and
// mlp_only_layers leave dense run a plain MLP.
#pragma once

#include <cstdint>

#include "model/decoder_for_causal_lm.h"

namespace sgl::model {

class Qwen2MoeForCausalLM final : public DecoderForCausalLM {
  friend DecoderForCausalLM;  // load<Qwen2MoeForCausalLM>() constructs it
  using DecoderForCausalLM::DecoderForCausalLM;

  Mlp mlp_for_layer(int64_t layer) const override;
};

}  // namespace sgl::model
