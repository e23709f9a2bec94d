// LlamaForCausalLM: the decoder with a dense SwiGLU MLP on every layer. Mistral, Qwen2 and Qwen3
// are this model too: what sets them apart (a sliding window, q/k/v biases, q/k norm) reaches the
// blocks through the config, as their rows in the architecture table say.
#pragma once

#include <cstdint>

#include "model/decoder_for_causal_lm.h"

namespace sgl::model {

class LlamaForCausalLM final : public DecoderForCausalLM {
  friend DecoderForCausalLM;  // load<LlamaForCausalLM>() constructs it
  using DecoderForCausalLM::DecoderForCausalLM;

  Mlp mlp_for_layer(int64_t layer) const override;
};

}  // namespace sgl::model
