// Launchers of the reference CUDA paged attention (declared without CUDA headers).
#pragma once

#include "attention/kv_pool.h"
#include "backend/stream.h"
#include "core/tensor.h"
#include "forward/forward_batch.h"

namespace sgl::attention::cuda {

// Causal attention of each query row over its request's KV (fb.kv_indptr / fb.kv_indices),
// or with fb.tree_mask over the prefix and the new tokens its mask row names; one warp per
// (token, head), online softmax in f32. q: [T, Hq, D]; out: [T, Hq * D] of q's dtype; the cache
// in q's dtype or FP8 (each code read as float(code) * its scale, in f32).
void reference_attention(const Tensor& q, const LayerKv& cache, const Tensor& out,
                         const ForwardBatch& fb, float scale, backend::Stream stream);

}  // namespace sgl::attention::cuda
