// Qwen3MoeForCausalLM: the decoder (with q/k norm) whose sparse layers run routed experts, no
// shared expert; the layers decoder_sparse_step and mlp_only_layers leave dense run a plain MLP.
#pragma once

#include <cstdint>

#include "model/decoder_for_causal_lm.h"

namespace sgl::model {

class Qwen3MoeForCausalLM final : public DecoderForCausalLM {
  friend DecoderForCausalLM;  // load<Qwen3MoeForCausalLM>() constructs it
  using DecoderForCausalLM::DecoderForCausalLM;

  Mlp mlp_for_layer(int64_t layer) const override;
};

}  // namespace sgl::model
