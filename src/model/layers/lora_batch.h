// LoraBatch: the LoRA adapters one forward pass's requests use, as runs of rows (each request's
// rows are contiguous, ForwardBatch::qo_indptr), applied after each targeted projection.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/stream.h"
#include "core/tensor.h"
#include "forward/forward_batch.h"
#include "model/lora_adapter.h"

namespace sgl::model {

class LoraBatch {
 public:
  LoraBatch() = default;  // no adapter: apply() does nothing
  // fb.lora_ids_host[b] (when given) is request b's adapter: 0 none, i adapters[i - 1].
  // `shrunk`: f32 [>= fb.num_tokens, >= the largest rank] scratch.
  LoraBatch(std::span<const LoraAdapter> adapters, const ForwardBatch& fb, const Tensor& shrunk);

  bool empty() const { return segments_.empty(); }
  // y (rows as x's; a projection's column range of its output) += scaling * (x A^T) B^T for the
  // rows of each adapter that targets `module` in `layer`.
  void apply(int64_t layer, LoraModule module, const Tensor& x, const Tensor& y,
             backend::Stream stream) const;

 private:
  struct Segment {
    int64_t begin = 0;  // rows [begin, end)
    int64_t end = 0;
    const LoraAdapter* adapter = nullptr;
  };
  std::vector<Segment> segments_;
  Tensor shrunk_;
};

}  // namespace sgl::model
