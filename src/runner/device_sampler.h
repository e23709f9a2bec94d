// DeviceSampler: samples GPU logits on the GPU (kernels::sample_tokens) and brings back only the
// chosen ids and logprobs — a few bytes per request instead of a [bs, vocab] logits copy.
#pragma once

#include <memory>

#include "backend/stream.h"
#include "core/allocator.h"
#include "core/buffer.h"
#include "sampling/sampler.h"

namespace sgl::runner {

class DeviceSampler {
 public:
  // Buffers for up to `capacity` rows on `allocator`'s device, staged through `pinned` host
  // memory (both must outlive this).
  DeviceSampler(Allocator& allocator, Allocator& pinned, int64_t capacity);
  ~DeviceSampler();

  // Whether the device op covers `batch` (top_logprobs_num up to kernels::kMaxTopLogprobs).
  static bool supports(const sampling::SamplingBatch& batch);
  // logits: f32 [bs, vocab] on the device. Uploads the parameters, samples on `stream`, copies
  // the results back (one synchronisation).
  sampling::SampleOutput sample(const Tensor& logits, const sampling::SamplingBatch& batch,
                                backend::Stream stream);

 private:
  int64_t capacity_;
  Buffer params_host_, params_device_;    // packed SamplingRows (kernels/sampling.h)
  Buffer results_host_, results_device_;  // 32-bit words: ids, logprobs, top ids, top logprobs
};

}  // namespace sgl::runner
