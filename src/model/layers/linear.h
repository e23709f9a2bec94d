// Linear: a projection's weight (and bias) as a block owns it, loaded through load_linear, the one
// place a tensor-parallel shard rule will split it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/stream.h"
#include "core/buffer.h"
#include "core/status.h"
#include "core/tensor.h"
#include "model/weight_loader.h"

namespace sgl::model {

// How tensor parallelism would split the weight across ranks, as SGLang's layers do:
// ColumnParallelLinear (output rows), RowParallelLinear (input columns; the output is then
// all-reduced), VocabParallelEmbedding / ParallelLMHead (vocabulary rows), ReplicatedLinear (not
// split; MoE routers). Each linear states its rule where it is declared; at one rank (all there is
// today) every rule keeps the whole weight.
enum class ShardRule { kColumn, kRow, kVocab, kReplicated };

// One linear as the checkpoint stores it: tensors `<module>.weight` [out, in] (and
// `<module>.bias` [out]) for each module, stacked along the output dimension when there are
// several (q|k|v, gate|up).
struct LinearSpec {
  std::vector<std::string> modules;   // e.g. {"model.layers.0.mlp.down_proj"}
  std::vector<int64_t> out_features;  // rows of each module
  int64_t in_features = 0;
  bool bias = false;
  ShardRule shard = ShardRule::kColumn;
};

struct Linear {
  Buffer weight;  // [sum(out_features), in_features]
  Buffer bias;    // [sum(out_features)]; empty without bias

  // y[T, out] = x[T, in] weight^T (+ bias).
  void forward(const Tensor& x, const Tensor& y, backend::Stream stream) const;
};

// Loads (or, in the loader's check-only mode, checks) the weight, then the bias, into `out`.
// Queued like every WeightLoader load: the Buffers hold the weights once the loader's finish()
// returns. Each Buffer is stored in `out` as soon as it is queued, so that on an error the ones
// already queued live on until finish() (which the caller runs on error paths too).
Status load_linear(WeightLoader& weights, const LinearSpec& spec, Linear& out);

}  // namespace sgl::model
