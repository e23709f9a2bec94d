// Device sampling: one next token per logits row by the rules of sampling/sampler.h, bit-identical
// to the CPU Sampler, with logprobs; no host synchronisation, no allocation, graph-capturable.
#pragma once

#include <cstdint>

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// The largest top_logprobs_num the op returns.
constexpr int32_t kMaxTopLogprobs = 20;

// Per-request sampling parameters, one entry per logits row, all on the logits' device.
struct SamplingRows {
  Tensor temperature;       // f32 [bs]: <= 1e-6 = greedy
  Tensor top_k;             // i32 [bs]: <= 0 = off, 1 = greedy
  Tensor top_p;             // f32 [bs]: >= 1 = off
  Tensor min_p;             // f32 [bs]: 0 = off
  Tensor seed;              // i64 [bs]: the request's u64 seed, bit for bit
  Tensor step;              // i64 [bs]: tokens generated so far (the RNG counter), as u64 bits
  Tensor top_logprobs_num;  // i32 [bs]: 0 = none; read only when top logprobs are asked for
};

// Where results go, on the logits' device. Undefined tensors are not computed.
struct SampledTokens {
  Tensor next_token_ids;       // i32 [bs] (required)
  Tensor next_token_logprobs;  // f32 [bs]: log_softmax(raw logits)[next id]
  // Top logprobs of the raw logits (logprob descending, ties by lower id). Row b fills its first
  // min(top_logprobs_num[b], k_max, V) entries; the rest get id -1 and logprob -inf.
  Tensor top_logprob_ids;  // i32 [bs, k_max], k_max <= kMaxTopLogprobs (with top_logprobs)
  Tensor top_logprobs;     // f32 [bs, k_max]
};

// Samples every row of `logits` (f32 [bs, V], last dim contiguous, bs <= 65535, V <= 2^18) on
// `stream`.
// CUDA only: host logits go through sampling::Sampler. Enqueues kernels and returns; the
// outputs are ready when `stream` reaches them. Reads only its arguments (no scratch memory),
// so it may be captured in a CUDA graph.
void sample_tokens(const Tensor& logits, const SamplingRows& rows, const SampledTokens& out,
                   backend::Stream stream);

// Grammar masks (structured output) before sampling: logits[rows[i], t] = -inf where bit t % 32
// of bitmask[i, t / 32] is 0, for each i < n. logits: f32 [bs, V]; rows: i32 [n] (each in
// [0, bs)); bitmask: i32 [n, words] with words * 32 >= V; all on the logits' device. CUDA only:
// host logits go through sampling::apply_vocab_mask, the reference. Graph-capturable.
void apply_token_bitmask(const Tensor& logits, const Tensor& rows, const Tensor& bitmask,
                         backend::Stream stream);

// All of SamplingRows for up to `capacity` rows in one block of memory, so one copy uploads a
// batch's parameters: fill a host block, copy packed_sampling_rows_bytes(capacity) bytes to a
// device block, and pass the device view.
int64_t packed_sampling_rows_bytes(int64_t capacity);
// Views of rows [0, bs) of a packed block of `capacity` rows at `block` (host or device memory;
// 8-byte aligned).
SamplingRows packed_sampling_rows(void* block, Device device, int64_t capacity, int64_t bs);

}  // namespace sgl::kernels
