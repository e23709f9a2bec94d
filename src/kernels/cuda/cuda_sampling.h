// CUDA launchers of sample_tokens (declared without CUDA headers); arguments already validated.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"
#include "kernels/sampling.h"

namespace sgl::kernels::cuda {

// Enqueues the sampling kernel (and the top-logprobs kernel when `out` asks for them).
void sample_tokens(const Tensor& logits, const SamplingRows& rows, const SampledTokens& out,
                   backend::Stream stream);

// out_ids / out_logprobs [bs, k_max]: each row's top min(num[b], k_max, V) raw-logit logprobs,
// the rest -1 / -inf (top_logprobs.cu).
void top_logprobs(const Tensor& logits, const Tensor& num, const Tensor& out_ids,
                  const Tensor& out_logprobs, backend::Stream stream);

// Grammar masks: -inf at the disallowed tokens of the masked rows (token_bitmask.cu).
void apply_token_bitmask(const Tensor& logits, const Tensor& rows, const Tensor& bitmask,
                         backend::Stream stream);

}  // namespace sgl::kernels::cuda
