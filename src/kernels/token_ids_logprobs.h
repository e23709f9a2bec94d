// Device op: log_softmax of logits rows at token ids each row asks for (SGLang's
// token_ids_logprob), beside sample_tokens in the device sampler.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// For every row b of `logits` (f32 [bs, V], last dim contiguous) and every j in
// [offsets[b], offsets[b + 1]): out[j] = log_softmax(logits[b])[ids[j]], the same value
// sampling::logprobs_of_ids gives (within float rounding). offsets: i32 [bs + 1], non-decreasing
// from 0; ids: i32 [n], each in [0, V) (NaN otherwise); out: f32 [n]; all on the logits' device.
// Rows with no ids cost one offsets read. CUDA only; no host synchronisation, no allocation.
void token_ids_logprobs(const Tensor& logits, const Tensor& offsets, const Tensor& ids,
                        const Tensor& out, backend::Stream stream);

}  // namespace sgl::kernels
