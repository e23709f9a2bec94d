// ForwardBatch: device views describing one forward pass; the model and attention read only this.
#pragma once

#include <cstdint>
#include <span>

#include "core/host_device.h"
#include "core/tensor.h"
#include "forward/forward_mode.h"
#include "forward/pooling.h"

namespace sgl {

// Which positions produce logits.
enum class LogitsMode {
  kLastPerRequest,  // one row per request: its last token (prefill) or its only token (decode)
  kAllTokens,       // every token (teacher-forced scoring, prompt logprobs)
};

// An input id the host does not know yet: the id that the runner's latest sampling on the device
// drew for its request `row` (or row `row` of ForwardBatch::id_ref_table; the runner resolves it
// on the device before the model reads it), so a step can be queued before the ids it reads
// have reached the host.
SGL_HOST_DEVICE constexpr int32_t sampled_id_ref(int32_t row) { return -(row + 1); }
SGL_HOST_DEVICE constexpr bool is_sampled_id_ref(int32_t id) { return id < 0; }
SGL_HOST_DEVICE constexpr int32_t sampled_id_row(int32_t ref) { return -ref - 1; }

// Which hidden states a forward pass returns beside its logits (SGLang's CaptureHiddenMode),
// for EAGLE drafts: the final norm's output and the captured layers' (ModelOutput).
enum class CaptureHiddenMode : uint8_t {
  kNull,  // none
  kLast,  // the logits rows' (num_logit_rows())
  kFull,  // every token's (num_tokens): a draft extend reads each position's
};

// Every tensor is a view into staging buffers owned by the ForwardBatchBuilder; each request
// `b` owns query rows [qo_indptr[b], qo_indptr[b + 1]).
struct ForwardBatch {
  ForwardMode mode = ForwardMode::kIdle;
  LogitsMode logits_mode = LogitsMode::kLastPerRequest;
  int32_t batch_size = 0;
  int32_t num_tokens = 0;
  int32_t max_seq_len = 0;  // max over seq_lens
  // 1 + the largest row a sampled_id_ref() input names; 0 when the input ids are all known.
  int32_t sampled_id_rows = 0;
  // i32 [>= sampled_id_rows], on the batch's device: the ids sampled_id_ref() inputs name, in
  // place of the latest device sampling's (EAGLE: the drafts a chain left on the device).
  Tensor id_ref_table;
  CaptureHiddenMode capture_hidden_mode = CaptureHiddenMode::kNull;
  // The caller reads model::ModelOutput::routed_experts (a model recording them): CUDA graphs
  // do not return them, so the pass runs eagerly.
  bool reads_routed_experts = false;
  // kNone: logits. Otherwise (an embedding model's batch) one pooled row per request instead:
  // its last token's final hidden state (kLast) or the sum of this pass's (kMean: a prompt may
  // span several chunked passes, so the caller divides once it has them all).
  PoolingType pooling = PoolingType::kNone;

  Tensor input_ids;           // i32 [num_tokens]
  Tensor positions;           // i32 [num_tokens]
  Tensor out_cache_loc;       // i32 [num_tokens]: KV slot each new token is written to
  Tensor seq_lens;            // i32 [bs]: prefix + new tokens
  Tensor extend_prefix_lens;  // i32 [bs]: tokens already in the KV cache
  Tensor extend_seq_lens;     // i32 [bs]: new tokens this pass
  Tensor qo_indptr;           // i32 [bs + 1]
  Tensor req_pool_indices;    // i32 [bs]: row of each request in req_to_token
  Tensor req_to_token;        // i32 [max_reqs, max_context_len]: KV slot of each token (CPU)
  // GPU batches carry each request's KV slots compactly instead: request b's tokens are
  // kv_indices[kv_indptr[b] : kv_indptr[b + 1]] (seq_lens[b] of them).
  Tensor kv_indptr;   // i32 [bs + 1] (GPU batches only)
  Tensor kv_indices;  // i32 [sum(seq_lens)] (GPU batches only)
  // EAGLE tree drafts (a verify pass over a draft tree): token t's visibility over its request's
  // new tokens, bit j for new token j (so at most 64 new tokens per request); the prefix is
  // visible to all. Undefined: causal (today's path, no mask read).
  Tensor tree_mask;  // i64 [num_tokens], bits as uint64

  // Host mirrors of the per-request lengths (the attention backend plans with these).
  std::span<const int32_t> seq_lens_host;
  std::span<const int32_t> extend_prefix_lens_host;
  std::span<const int32_t> extend_seq_lens_host;
  std::span<const int32_t> qo_indptr_host;
  std::span<const int32_t> req_pool_indices_host;
  std::span<const uint64_t> tree_mask_host;  // [num_tokens] when tree_mask is defined
  // Each request's LoRA adapter (model::ModelOptions::lora_paths; 0: none, i: the i-th) [bs];
  // empty when no request of the batch uses one.
  std::span<const int32_t> lora_ids_host;

  // Rows of the logits output: batch_size or num_tokens.
  int32_t num_logit_rows() const {
    return logits_mode == LogitsMode::kAllTokens ? num_tokens : batch_size;
  }
  // Rows of the captured hidden states (ModelOutput::hidden_states); 0 without capture.
  int32_t num_hidden_rows() const {
    switch (capture_hidden_mode) {
      case CaptureHiddenMode::kNull:
        return 0;
      case CaptureHiddenMode::kLast:
        return num_logit_rows();
      case CaptureHiddenMode::kFull:
        return num_tokens;
    }
    return 0;
  }
};

}  // namespace sgl
