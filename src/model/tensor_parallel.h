// TensorParallel: a rank's place in a tensor-parallel group, and the arithmetic every shard rule
// shares (SGLang's tp_rank / tp_size, divide, and the KV heads a rank holds).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "model/model_config.h"

namespace sgl::model {

struct TensorParallel {
  int rank = 0;
  int size = 1;

  bool operator==(const TensorParallel&) const = default;
};

// A rank's contiguous range of some dimension.
struct ShardRange {
  int64_t start = 0;
  int64_t size = 0;
};

// The rank's share of `total` values made of `units` equal units (heads; or units == total for
// plain rows / columns). units >= tp.size: units / tp.size units each (units must divide evenly).
// units < tp.size (only KV heads, SGLang's replication): tp.size / units ranks share each unit,
// rank r holding unit r * units / tp.size (tp.size must be a multiple of units). InvalidArgument
// naming `what` otherwise.
Result<ShardRange> shard_of(int64_t total, int64_t units, TensorParallel tp,
                            const std::string& what);

// KV heads each rank holds: total / tp, or one (replicated) when total < tp.
int64_t kv_heads_per_rank(int64_t total_num_kv_heads, int tp_size);

// Whether `config` can be split over tp_size ranks with ep_size expert groups: tp_size >= 1; it
// divides the attention heads, the MLPs' intermediate sizes (dense, the shared expert's; each
// expert's by tp_size / ep_size, the ranks sharing an expert) and the vocabulary (no padding);
// KV heads divide by it or it by them; check_expert_parallel (expert_parallel.h) accepts ep_size.
// InvalidArgument naming the first that fails, so a bad --tp-size / --ep-size is refused at start.
Status check_tensor_parallel(const ModelConfig& config, int tp_size, int ep_size = 1);

}  // namespace sgl::model
