// MixtralForCausalLM: the decoder with a sparse mixture-of-experts block on every layer, named
// under `block_sparse_moe.` (router `gate`, experts `w1` / `w3` / `w2`).
#pragma once

#include <cstdint>

#include "model/decoder_for_causal_lm.h"

namespace sgl::model {

class MixtralForCausalLM final : public DecoderForCausalLM {
  friend DecoderForCausalLM;  // load<MixtralForCausalLM>() constructs it
  using DecoderForCausalLM::DecoderForCausalLM;

  Mlp mlp_for_layer(int64_t layer) const override;
};

}  // namespace sgl::model
