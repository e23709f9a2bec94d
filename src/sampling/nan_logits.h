// SGLang's --enable-nan-detection: NaN logits (a broken checkpoint, an overflow) are sampled as
// a very unlikely token instead of poisoning the whole row's distribution and logprobs.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace sgl::sampling {

// SGLang's replacement value for a NaN logit.
inline constexpr float kNanLogitReplacement = -1e5f;

// Sets every NaN of logits (host f32 [rows, vocab], last dim contiguous) to
// kNanLogitReplacement; returns how many rows held one.
int64_t replace_nan_logits(const Tensor& logits);

}  // namespace sgl::sampling
