// CudaGraphRunner: decode forward passes captured as CUDA graphs, one per batch-size bucket
// (1, 2, 4, 8, 16, 24, ... up to the max), replayed with the batch padded to its bucket.
#pragma once

#include <memory>
#include <vector>

#include "attention/attention_backend.h"
#include "backend/cuda/cuda_graph.h"
#include "core/allocator.h"
#include "core/buffer.h"
#include "distributed/communicator.h"
#include "model/model.h"

namespace sgl::runner {

// The capture buckets for `max_bs`: 1, 2, 4, 8, then every multiple of 8 up to max_bs (and
// max_bs itself).
std::vector<int32_t> cuda_graph_batch_sizes(int32_t max_bs);

class CudaGraphRunner {
 public:
  // Captures one decode graph per size in `batch_sizes`, largest first. Borrows everything.
  // `communicator`: the rank's tensor-parallel group (null at one rank); its collectives are
  // captured into the graphs, so every rank of the group must capture at once (the same sizes).
  static Result<std::unique_ptr<CudaGraphRunner>> create(
      model::Model& model, attention::AttentionBackend& attention, Allocator& allocator,
      backend::Stream stream, std::vector<int32_t> batch_sizes, int32_t max_context_len,
      distributed::Communicator* communicator = nullptr);
  ~CudaGraphRunner();

  // A decode batch with one logits row per request, at most max_batch_size() requests and no
  // hidden states asked for (the graphs return logits only).
  bool can_run(const ForwardBatch& fb) const;
  // Copies fb's metadata into the bucket's static inputs and replays its graph on the stream.
  // sampled: the ids of the latest sampling on the device, which fb's sampled_id_ref() inputs
  // read (null when it has none). Returns f32 logits [fb.batch_size, vocab] on the
  // device, valid until the next forward.
  model::ModelOutput replay(const ForwardBatch& fb, const int32_t* sampled);
  int32_t max_batch_size() const { return buckets_.empty() ? 0 : buckets_.back().size; }

 private:
  struct Bucket {
    int32_t size = 0;
    ForwardBatch fb;  // views of the static inputs, batch_size = size
    backend::CudaGraph graph;
    Tensor logits;  // f32 [size, vocab] at the address the graph writes
  };
  CudaGraphRunner(attention::AttentionBackend& attention, backend::Stream stream)
      : attention_(attention), stream_(stream) {}
  ForwardBatch static_batch(int32_t size);

  attention::AttentionBackend& attention_;
  backend::Stream stream_;
  int32_t max_context_len_ = 0;
  int32_t capacity_ = 0;  // requests the static inputs hold (the largest bucket)
  Buffer static_ints_;    // i32: every static input array, at fixed offsets
  std::vector<int32_t> ones_, zeros_, iota_;  // host mirrors of a padded batch
  std::vector<Bucket> buckets_;               // ascending by size
};

}  // namespace sgl::runner
