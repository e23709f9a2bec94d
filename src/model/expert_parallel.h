// ExpertParallel: a rank's place in the MoE layers' split under expert parallelism (SGLang's
// --ep-size: moe_ep_rank / moe_ep_size, moe_tp_rank / moe_tp_size), and the start-up check.
//
// The tp_size tensor-parallel ranks form ep_size groups of moe_tp_size = tp_size / ep_size
// consecutive ranks: rank r is in group r / moe_tp_size. Group g holds the experts
// [g * E / ep_size, (g + 1) * E / ep_size), and within the group rank r holds rows
// [q * I / moe_tp_size, (q + 1) * I / moe_tp_size) of each of them (q = r % moe_tp_size), as
// tensor parallelism splits a dense MLP. ep_size 1 is plain tensor parallelism (every rank every
// expert); ep_size == tp_size gives each rank whole experts.
#pragma once

#include <cstdint>

#include "core/device.h"
#include "core/status.h"
#include "model/model_config.h"
#include "model/tensor_parallel.h"

namespace sgl::model {

// How a sparse block's tokens reach the experts other ranks hold.
enum class ExpertDispatch : uint8_t {
  kAuto,  // the token exchange on the CPU, local experts and an all-reduce on GPUs
  // Each rank sends its slice of the batch's tokens to the ranks holding their experts and gets
  // the results back: two all_to_alls (model/layers/expert_dispatch.h; host code).
  kAllToAll,
  // Every rank holds every token already (attention is replicated or tensor-parallel): each runs
  // its own experts over the pairs routed to them, the other pairs masked (moe_local_ids), and
  // the block's one all-reduce adds the ranks' outputs up (SGLang's EP MoE without an all-to-all
  // backend). No tokens move; it runs in device memory, inside CUDA graphs.
  kAllReduce,
};

// kAuto resolved for `device`.
ExpertDispatch resolve_expert_dispatch(ExpertDispatch dispatch, Device device);

struct ExpertParallel {
  int ep_rank = 0;        // SGLang's moe_ep_rank: the rank's group of experts
  int ep_size = 1;        // moe_ep_size (--ep-size)
  TensorParallel moe_tp;  // the rank's share of its group's experts' intermediate rows

  bool operator==(const ExpertParallel&) const = default;
};

// Rank tp.rank's place when tp.size ranks run ep_size expert groups (ep_size divides tp.size:
// check_expert_parallel).
ExpertParallel expert_parallel(TensorParallel tp, int ep_size);

// The experts group ep.ep_rank holds: a contiguous range of num_experts / ep.ep_size.
ShardRange local_experts(int64_t num_experts, const ExpertParallel& ep);

// Whether `config` can run --ep-size ep_size over --tp-size tp_size ranks: ep_size >= 1; above 1
// ep_size must divide tp_size (SGLang's rule), the model must be a MoE one and ep_size must divide
// its num_experts.
// InvalidArgument naming the rule that fails. check_tensor_parallel calls it.
Status check_expert_parallel(const ModelConfig& config, int tp_size, int ep_size);

}  // namespace sgl::model
