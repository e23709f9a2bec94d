// LoraBatch: segments of rows by adapter, and the update per segment.
#include "model/layers/lora_batch.h"

#include "core/check.h"
#include "kernels/lora.h"

namespace sgl::model {

LoraBatch::LoraBatch(std::span<const LoraAdapter> adapters, const ForwardBatch& fb,
                     const Tensor& shrunk)
    : shrunk_(shrunk) {
  if (fb.lora_ids_host.empty()) return;
  SGL_CHECK_EQ(static_cast<int64_t>(fb.lora_ids_host.size()), fb.batch_size);
  for (int32_t b = 0; b < fb.batch_size; ++b) {
    const int32_t id = fb.lora_ids_host[b];
    SGL_CHECK(id >= 0 && static_cast<size_t>(id) <= adapters.size())
        << "LoRA adapter " << id << " of " << adapters.size();
    const int64_t begin = fb.qo_indptr_host[b], end = fb.qo_indptr_host[b + 1];
    if (id == 0 || begin == end) continue;
    const LoraAdapter* adapter = &adapters[id - 1];
    SGL_CHECK(!adapter->layers.empty()) << "LoRA adapter " << id << " is not loaded";
    if (!segments_.empty() && segments_.back().adapter == adapter &&
        segments_.back().end == begin) {
      segments_.back().end = end;  // the same adapter's next request
    } else {
      segments_.push_back({begin, end, adapter});
    }
  }
}

void LoraBatch::apply(int64_t layer, LoraModule module, const Tensor& x, const Tensor& y,
                      backend::Stream stream) const {
  for (const Segment& s : segments_) {
    const LoraWeights& w = s.adapter->layers[layer][static_cast<int>(module)];
    if (!w.a.tensor().defined()) continue;  // the adapter leaves this module alone
    const int64_t rows = s.end - s.begin, r = s.adapter->config.r;
    SGL_CHECK_LE(rows * r, shrunk_.numel());
    const Tensor shrunk =
        shrunk_.reshape({shrunk_.numel()}).slice_rows(0, rows * r).reshape({rows, r});
    kernels::add_lora(x.slice_rows(s.begin, rows), w.a.tensor(), w.b.tensor(),
                      s.adapter->config.scaling(), shrunk, y.slice_rows(s.begin, rows), stream);
  }
}

}  // namespace sgl::model
