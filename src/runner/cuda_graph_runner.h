// CudaGraphRunner: forward passes captured as CUDA graphs, one per batch-size bucket
// (graph_batch_sizes.h), replayed with the batch padded to its bucket. Each runner
// captures one pass shape: `tokens` new tokens per request. Decode is tokens = 1 (one logits
// row per request); a speculative verify (SGLang's TARGET_VERIFY graphs) is tokens = the last
// token plus its drafts, every token a logits row, every token's hidden states kept for an
// EAGLE draft, optionally under a tree mask.
#pragma once

#include <memory>
#include <vector>

#include "attention/attention_backend.h"
#include "backend/cuda/cuda_graph.h"
#include "core/allocator.h"
#include "core/buffer.h"
#include "distributed/communicator.h"
#include "model/model.h"
#include "runner/graph_batch_sizes.h"

namespace sgl::runner {

// What one runner's graphs compute per request.
struct GraphPassShape {
  int32_t tokens = 1;      // new tokens per request: 1 a decode, > 1 a verify
  bool tree_mask = false;  // verify only: the graphs read ForwardBatch::tree_mask
};

class CudaGraphRunner {
 public:
  // Captures one graph per size in `batch_sizes`, largest first. Borrows everything.
  // `communicator`: the rank's tensor-parallel group (null at one rank); its collectives are
  // captured into the graphs, so every rank of the group must capture at once (the same sizes).
  static Result<std::unique_ptr<CudaGraphRunner>> create(
      model::Model& model, attention::AttentionBackend& attention, Allocator& allocator,
      backend::Stream stream, std::vector<int32_t> batch_sizes, int32_t max_context_len,
      distributed::Communicator* communicator = nullptr, GraphPassShape shape = {});
  ~CudaGraphRunner();

  // Decode (tokens 1): a decode batch with one logits row per request and no hidden states
  // asked for. Verify (tokens T > 1): an extend (or target-verify) batch whose every request
  // has exactly T new tokens, every token a logits row, hidden states none or every token's,
  // with a tree mask exactly when the graphs were captured with one. Both: at most
  // max_batch_size() requests.
  bool can_run(const ForwardBatch& fb) const;
  // Copies fb's metadata into the bucket's static inputs and replays its graph on the stream.
  // sampled: the ids of the latest sampling on the device, which fb's sampled_id_ref() inputs
  // read (null when it has none). Returns f32 logits [fb.num_logit_rows(), vocab] (and for a
  // verify that asks, hidden states [fb.num_tokens, ...]) on the device, valid until the next
  // forward.
  model::ModelOutput replay(const ForwardBatch& fb, const int32_t* sampled);
  int32_t max_batch_size() const { return buckets_.empty() ? 0 : buckets_.back().size; }
  const GraphPassShape& shape() const { return shape_; }

 private:
  struct Bucket {
    int32_t size = 0;
    ForwardBatch fb;  // views of the static inputs, batch_size = size
    backend::CudaGraph graph;
    model::ModelOutput out;  // the tensors at the addresses the graph writes
  };
  CudaGraphRunner(attention::AttentionBackend& attention, backend::Stream stream,
                  GraphPassShape shape)
      : attention_(attention), stream_(stream), shape_(shape) {}
  bool is_verify() const { return shape_.tokens > 1; }
  ForwardBatch static_batch(int32_t size);

  attention::AttentionBackend& attention_;
  backend::Stream stream_;
  GraphPassShape shape_;
  int32_t max_context_len_ = 0;
  int32_t capacity_ = 0;  // requests the static inputs hold (the largest bucket)
  Buffer static_ints_;    // i32: every static input array, at fixed offsets
  Buffer static_mask_;    // i64 [capacity_ * tokens]: the tree mask (tree verify graphs only)
  std::vector<int32_t> tokens_, zeros_, indptr_;  // host mirrors of a padded batch
  std::vector<Bucket> buckets_;                   // ascending by size
};

}  // namespace sgl::runner
