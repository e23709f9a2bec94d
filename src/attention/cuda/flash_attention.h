// Launchers of our flash attention kernels (declared without CUDA headers): split-KV decode
// (flash-decoding) and tensor-core extend/prefill, all paged with page size 1 (each token's KV slot
// comes from fb.kv_indices). The cache (LayerKv) is bf16 or FP8 (f8e4m3 / f8e5m2, each code read
// as float(code) * its scale and rounded to bf16 in shared memory); q and out are bf16.
#pragma once

#include <cstdint>

#include "attention/kv_pool.h"
#include "attention/qk_norm.h"
#include "backend/stream.h"
#include "core/tensor.h"
#include "forward/forward_batch.h"

namespace sgl::attention::cuda {

// Raise the kernels' dynamic shared-memory limits on the current device; call once (per
// device) before the first launch, outside graph capture. configure_flash_extend_kernels
// returns whether the device runs the Hopper extend kernel (kernels::cuda::hopper_kernels_run),
// which flash_extend's `hopper` then asks for.
void configure_flash_decode_kernels();
bool configure_flash_extend_kernels();

// The decode kernel's CTA shape. Narrow: 2 warps share 32-token KV tiles, several CTAs per SM,
// splits aligned to 64 tokens; for batches whose (request, KV head) pairs fill the GPU. Wide:
// 8 warps (4 at head_dim 256) share 128-token (64-token) tiles, splits of at least 256 tokens;
// for small batches, where a short context is one CTA per KV head with nothing to merge.
enum class DecodeWidth { kNarrow, kWide };

// How a decode batch is cut: the CTA shape and the splits per request.
struct DecodeShape {
  DecodeWidth width = DecodeWidth::kNarrow;
  int num_splits = 1;
  // Wide only: with at most this many non-empty splits in the batch (summed over requests), the
  // merge kernel launches the kernel after it before waiting (decode_early_launch_splits in
  // split_kv_policy.h); 0: never.
  int early_launch_splits = 0;
};

// Tokens a split's length is a multiple of (split_kv_policy.h), per width.
int flash_decode_split_align(DecodeWidth width);

// Decode CTAs of this head_dim's kernel for a cache of kv_dtype that fit on one SM at once (after
// configuring).
int flash_decode_ctas_per_sm(int head_dim, DecodeWidth width, DType kv_dtype);

// Whether the flash kernels read caches of this dtype (bf16, f8e4m3, f8e5m2).
bool flash_reads_kv_dtype(DType dtype);
// Checks (SGL_CHECK) that the layer's K and V are of one such dtype (the launchers, each time).
void check_flash_cache(const LayerKv& cache);

// Preallocated f32 scratch for split-KV decode partials; the backend owns the memory.
struct SplitKvScratch {
  float* o = nullptr;    // [rows, head_dim]: each split's normalized output
  float* lse = nullptr;  // [rows]: each split's log2-sum-exp2 of its scaled scores
  int64_t rows = 0;      // capacity in (request, split, q head) rows
};

// A decode batch's new tokens, for flash_decode to rotate and store itself (forward_with_rope):
// q and k arrive unrotated; k rotated and v are written to their slots (FP8 caches: as codes,
// which the kernel then reads back like any other position), q is rotated into the kernel's
// tile only (q and k themselves stay as they were). Rows 16-byte aligned.
// With qk_norm (qk_norm_fusable, kv_store.h), q and k are normalized per head first, as
// kernels::qk_rms_norm would.
struct DecodeNewTokens {
  Tensor k;              // [bs, Hk, D] bf16, rows strided
  Tensor v;              // [bs, Hk, D] bf16, rows strided
  Tensor positions;      // i32 [bs]
  Tensor cos_sin;        // f32 [max_pos, D]: cos | sin halves
  Tensor out_cache_loc;  // i32 [bs]
  const QkNorm* qk_norm = nullptr;
};

// Decode attention (one query per request, fb.mode == kDecode): grid (splits, Hk, bs);
// each CTA attends all q heads of one KV head over one chunk of one request's KV, then, when a
// request has more than one non-empty split, a merge kernel combines the partials (scratch)
// into out. Needs Hq / Hk <= 16. Reads lengths and slots only from fb's device tensors
// (seq_lens, kv_indptr, kv_indices), so the launches can be captured in a CUDA graph.
// With new_tokens, q is unrotated and the new K/V not yet stored (see DecodeNewTokens); without,
// the KV store already ran.
// q: [bs, Hq, D]; cache.k, cache.v: [slots, Hk, D]; out: [bs, Hq * D].
// fresh_span: the trailing positions of each request the kernel before may have written (the
// KV store of a decode's token: 1; of a verify's new tokens run as decode rows: up to their
// count), which the kernel reads only after waiting on it.
void flash_decode(const Tensor& q, const LayerKv& cache, const Tensor& out, const ForwardBatch& fb,
                  float scale, DecodeShape shape, const SplitKvScratch& scratch,
                  backend::Stream stream, const DecodeNewTokens* new_tokens = nullptr,
                  int fresh_span = 1);

// A causal verify pass (fb: a few new tokens per request after its prefix) as decode rows for
// flash_decode: row t, new token i of request b, attends to b's KV positions 0..prefix + i, so
// row_seq_lens[t] = seq_lens[b] - new_b + i + 1 and row_kv_start[t] = kv_indptr[b] (flash_decode
// reads only kv_indptr[t] of a row). Reads fb.qo_indptr, seq_lens and kv_indptr on the device;
// both outputs i32 [fb.num_tokens]; one launch.
void verify_rows_as_decode(const ForwardBatch& fb, int32_t* row_seq_lens, int32_t* row_kv_start,
                           backend::Stream stream);

// Extend / prefill / mixed attention: causal within each request's new tokens after its cached
// prefix (query i of a request with prefix P sees KV positions <= P + i); with fb.tree_mask
// (a tree verify, <= 64 new tokens a request) query i sees the prefix and the new tokens its
// mask row names (all among 0..i). Each CTA takes 64 or 128
// rows of (token, q head) pairs of one request and one KV head (GQA packed into the MMA M
// dimension); with `hopper`, head_dim 128 without a tree mask runs on warpgroup MMAs
// (flash_extend_hopper.cu; bf16 caches only). Also correct for decode batches with any Hq / Hk.
// q: [T, Hq, D]; cache.k, cache.v: [slots, Hk, D]; out: [T, Hq * D].
void flash_extend(const Tensor& q, const LayerKv& cache, const Tensor& out, const ForwardBatch& fb,
                  float scale, backend::Stream stream, bool hopper);

}  // namespace sgl::attention::cuda
