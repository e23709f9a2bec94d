// DeviceSampler: samples GPU logits on the GPU (kernels::sample_tokens) and brings back only the
// chosen ids and logprobs — a few bytes per request instead of a [bs, vocab] logits copy. A
// sampling is staged (its parameters uploaded on a copy stream, beside the forward that makes the
// logits), launched, and collected later, so the next step can be queued before this one's ids
// reach the host; until then they stay on the device (latest_ids()). Rows asking
// token_ids_logprob get those logprobs on the device too (kernels::token_ids_logprobs, a second
// small pass over their logits rows only), so such batches keep the overlapped device loop
// instead of copying [bs, vocab] logits to the host.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/stream.h"
#include "backend/stream_event.h"
#include "core/allocator.h"
#include "core/buffer.h"
#include "sampling/sampler.h"
#include "sampling/vocab_mask.h"

namespace sgl::runner {

class DeviceSampler {
 public:
  // Samplings that may be staged and not yet collected.
  static constexpr int kSlots = 2;

  // One sampling between stage() and collect().
  struct Ticket {
    int slot = 0;
    int64_t bs = 0;
    bool logprobs = false;
    bool top = false;
    std::vector<int32_t> top_logprobs_num;  // [bs] when `top`, else empty
    // Some row asked token_ids_logprob: [bs + 1] where each row's ids start in the flat list.
    std::vector<int32_t> token_ids_offsets = {};
  };

  // Buffers for up to `capacity` rows on `allocator`'s device, staged through `pinned` host
  // memory (both must outlive this).
  DeviceSampler(Allocator& allocator, Allocator& pinned, int64_t capacity);
  ~DeviceSampler();

  // Whether the device op covers `batch` (top_logprobs_num up to kernels::kMaxTopLogprobs,
  // token_ids_logprob up to sampling::kMaxTokenIdsLogprob ids a row).
  static bool supports(const sampling::SamplingBatch& batch);
  int64_t capacity() const { return capacity_; }
  // Uploads `batch`'s parameters at once, on the sampler's copy stream. At most kSlots tickets
  // may be uncollected.
  Ticket stage(const sampling::SamplingBatch& batch);
  // Samples logits: f32 [ticket.bs, vocab] on the device, queued on `stream` after the staged
  // upload, and queues the download of the results.
  void launch(const Tensor& logits, const Ticket& ticket, backend::Stream stream);
  // Grammar masks: uploads `mask` (rows of the staged batch) and sets the disallowed logits to
  // -inf on `stream`, before launch(). The mask's host copy may be reused once this returns.
  void apply_vocab_mask(const Tensor& logits, const Ticket& ticket, const sampling::VocabMask& mask,
                        backend::Stream stream);
  // Waits for the launched sampling's results and returns them.
  sampling::SampleOutput collect(const Ticket& ticket);
  // i32 [capacity] on the device: the ids of the latest launch, valid for work queued on its
  // stream before the next launch; latest_rows() of them (0 before the first launch).
  const int32_t* latest_ids() const;
  int64_t latest_rows() const { return latest_rows_; }

 private:
  struct Slot {
    Buffer params_host, params_device;  // packed SamplingRows (kernels/sampling.h)
    Buffer results_host;                // 32-bit words: ids, logprobs, top ids, top logprobs
    // token_ids_logprob, made on first use: i32 offsets [bs + 1] then the ids, packed from the
    // start (host and device); f32 [ids] logprobs (device, and back on the host).
    Buffer token_ids_host, token_ids_device, token_ids_results_device, token_ids_results_host;
    // Grammar masks, made on first use: i32 rows [capacity] then bits [capacity, words].
    Buffer mask_host, mask_device;
    backend::StreamEvent uploaded, downloaded;
    bool busy = false;  // staged and not collected
  };
  Allocator& allocator_;
  Allocator& pinned_;
  int64_t capacity_;
  std::unique_ptr<backend::OwnedStream> copy_stream_;
  std::array<Slot, kSlots> slots_;
  int next_slot_ = 0;
  int64_t latest_rows_ = 0;
  Buffer results_device_;  // the layout of Slot::results_host
};

}  // namespace sgl::runner
