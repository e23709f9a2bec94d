// Launchers of our flash attention kernels (declared without CUDA headers): split-KV decode
// (flash-decoding) and tensor-core extend/prefill, all paged with page size 1 (each token's KV slot
// comes from fb.kv_indices).
#pragma once

#include <cstdint>

#include "backend/stream.h"
#include "core/tensor.h"
#include "forward/forward_batch.h"

namespace sgl::attention::cuda {

// Raise the kernels' dynamic shared-memory limits on the current device; call once (per
// device) before the first launch, outside graph capture.
void configure_flash_decode_kernels();
void configure_flash_extend_kernels();

// Decode CTAs of this head_dim's kernel that fit on one SM at once (after configuring).
int flash_decode_ctas_per_sm(int head_dim);

// Preallocated f32 scratch for split-KV decode partials; the backend owns the memory.
struct SplitKvScratch {
  float* o = nullptr;    // [rows, head_dim]: each split's normalized output
  float* lse = nullptr;  // [rows]: each split's log2-sum-exp2 of its scaled scores
  int64_t rows = 0;      // capacity in (request, split, q head) rows
};

// Decode attention (one query per request, fb.mode == kDecode): grid (num_splits, Hk, bs);
// each CTA attends all q heads of one KV head over one chunk of one request's KV, then, when a
// request has more than one non-empty split, a merge kernel combines the partials (scratch)
// into out. Needs Hq / Hk <= 16. Reads lengths and slots only from fb's device tensors
// (seq_lens, kv_indptr, kv_indices), so the launches can be captured in a CUDA graph.
// q: [bs, Hq, D]; k_cache, v_cache: [slots, Hk, D]; out: [bs, Hq * D].
void flash_decode(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                  const ForwardBatch& fb, float scale, int num_splits,
                  const SplitKvScratch& scratch, backend::Stream stream);

// Extend / prefill / mixed attention: causal within each request's new tokens after its cached
// prefix (query i of a request with prefix P sees KV positions <= P + i). Each CTA takes 64
// rows of (token, q head) pairs of one request and one KV head (GQA packed into the MMA M
// dimension). Also correct for decode batches with any Hq / Hk.
// q: [T, Hq, D]; k_cache, v_cache: [slots, Hk, D]; out: [T, Hq * D].
void flash_extend(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                  const ForwardBatch& fb, float scale, backend::Stream stream);

}  // namespace sgl::attention::cuda
