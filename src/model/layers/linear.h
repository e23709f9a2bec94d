// Linear: a projection's weight (and bias) as a block owns it, loaded through load_linear, the one
// place a tensor-parallel shard rule splits it, and run with the collective its rule needs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/stream.h"
#include "core/buffer.h"
#include "core/status.h"
#include "core/tensor.h"
#include "distributed/communicator.h"
#include "model/tensor_parallel.h"
#include "model/weight_loader.h"

namespace sgl::model {

// How tensor parallelism splits the weight across ranks, as SGLang's layers do:
// ColumnParallelLinear (output rows; each rank's output is its share of the features),
// RowParallelLinear (input columns; each rank's output is a partial sum, all-reduced),
// VocabParallelEmbedding / ParallelLMHead (vocabulary rows; lookups all-reduced, logits
// gathered), ReplicatedLinear (not split; MoE routers). Each linear states its rule where it is
// declared; at one rank every rule keeps the whole weight.
enum class ShardRule { kColumn, kRow, kVocab, kReplicated };

// One linear as the checkpoint stores it: tensors `<module>.weight` [out, in] (and
// `<module>.bias` [out]) for each module, stacked along the output dimension when there are
// several (q|k|v, gate|up). Sizes are the whole model's; load_linear takes the rank's shard.
struct LinearSpec {
  std::vector<std::string> modules;   // e.g. {"model.layers.0.mlp.down_proj"}
  std::vector<int64_t> out_features;  // rows of each module
  int64_t in_features = 0;
  bool bias = false;
  ShardRule shard = ShardRule::kColumn;
  // kColumn: the heads each module's rows make (shard_of's units: q heads, KV heads, which a
  // rank may share); empty: every row is a unit.
  std::vector<int64_t> heads = {};
  TensorParallel tp = {};
};

struct Linear {
  Buffer weight;  // the rank's shard: [sum(out_features), in_features] at one rank
  Buffer bias;    // [rows of weight]; empty without bias (and on ranks > 0 of a row shard)
  ShardRule shard = ShardRule::kReplicated;
  int tp_size = 1;
  int64_t vocab_start = 0;  // kVocab: the first vocabulary row this rank holds
  int64_t vocab_size = 0;   // kVocab: the whole vocabulary

  // y[T, out] = x[T, in] weight^T (+ bias). A row shard at tp > 1 then all-reduces y through
  // `comm` (SGLang's reduce_results; false leaves the partial sum for a caller that reduces
  // once for several, as a MoE block with a shared expert does). With `partial_sums` (f32, at
  // least [T, out]) and a 16-bit y, the rank's partial sum is computed, all-reduced and added in
  // f32 there and rounded into y once, as one rank's GEMM rounds its whole sum: no rounding of
  // each rank's partial and of the collective's 16-bit adds. Returns whether y is left as the
  // rank's partial sum (a row shard that would reduce, with reduce_results false).
  bool forward(const Tensor& x, const Tensor& y, backend::Stream stream,
               distributed::Communicator* comm = nullptr, bool reduce_results = true,
               const Tensor& partial_sums = Tensor()) const;
};

// Loads (or, in the loader's check-only mode, checks) the rank's shard of the weight, then of the
// bias, into `out`, by spec.shard. Errors name the module when the shard does not divide.
// Queued like every WeightLoader load: the Buffers hold the weights once the loader's finish()
// returns. Each Buffer is stored in `out` as soon as it is queued, so that on an error the ones
// already queued live on until finish() (which the caller runs on error paths too).
Status load_linear(WeightLoader& weights, const LinearSpec& spec, Linear& out);

// The vocab-parallel embedding: out [T, H] = the rows of `ids` (i32 [T]) in `table` (a kVocab
// Linear), each rank contributing the rows it holds, all-reduced.
void embed_tokens(const Linear& table, const Tensor& ids, const Tensor& out, backend::Stream stream,
                  distributed::Communicator* comm);

// The vocab-parallel LM head: logits f32 [T, V] = x [T, H] head^T. At tp > 1 each rank computes
// its vocabulary rows into `local` (f32, at least [T, V / tp]), gathers every rank's into
// `gathered` (f32, at least tp x T x V / tp values) and lays them out in vocabulary order, so
// every rank holds the same whole logits (and samples the same tokens).
void lm_head_logits(const Linear& head, const Tensor& x, const Tensor& local,
                    const Tensor& gathered, const Tensor& logits, backend::Stream stream,
                    distributed::Communicator* comm);

}  // namespace sgl::model
