// Launchers of the reference CUDA paged attention (declared without CUDA headers).
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"
#include "forward/forward_batch.h"

namespace sgl::attention::cuda {

// Causal attention of each query row over its request's KV (fb.kv_indptr / fb.kv_indices),
// or with fb.tree_mask over the prefix and the new tokens its mask row names; one warp per
// (token, head), online softmax in f32. q: [T, Hq, D]; out: [T, Hq * D].
void reference_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                         const Tensor& out, const ForwardBatch& fb, float scale,
                         backend::Stream stream);

}  // namespace sgl::attention::cuda
