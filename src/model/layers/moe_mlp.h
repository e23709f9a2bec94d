// MoeMlp: a decoder layer's sparse mixture-of-experts block: router, top-k experts (one fused
// op over the stacked expert weights), and optionally a shared expert with a sigmoid gate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "backend/stream.h"
#include "core/buffer.h"
#include "core/device.h"
#include "core/status.h"
#include "core/tensor.h"
#include "distributed/communicator.h"
#include "kernels/norm_linear.h"
#include "model/expert_parallel.h"
#include "model/layers/activation_plan.h"
#include "model/layers/dense_mlp.h"
#include "model/layers/expert_dispatch.h"
#include "model/layers/linear.h"
#include "model/model_config.h"
#include "model/weight_loader.h"

namespace sgl::model {

// How a checkpoint names a sparse block's tensors under the layer's prefix. The defaults are
// Hugging Face's usual names (Qwen2-MoE, Qwen3-MoE); an architecture with others says so
// (Mixtral: block_sparse_moe., w1 / w3 / w2).
struct MoeWeightNames {
  std::string block = "mlp.";  // the router is <block>gate
  // Per expert: <block>experts.E.<name>.weight.
  std::string gate_proj = "gate_proj";
  std::string up_proj = "up_proj";
  std::string down_proj = "down_proj";

  bool operator==(const MoeWeightNames&) const = default;
};

// The sizes and options of one sparse block.
struct MoeShape {
  int64_t hidden_size = 0;
  int64_t num_experts = 0;
  int64_t top_k = 0;
  int64_t intermediate_size = 0;         // each expert's
  int64_t shared_intermediate_size = 0;  // the shared expert's; 0 = none
  bool renormalize = false;              // top-k weights divided by their sum
  MoeWeightNames names;
  // At tp > 1 every rank holds every expert's share of the intermediate rows (and the shared
  // expert's), the router whole; the block's output is all-reduced once, after the combine.
  TensorParallel tp;
  // With ep.ep_size > 1 (expert parallelism) the routed experts are split instead: the rank holds
  // its group's experts (local_num_experts()) with its moe_tp share of their rows, and the
  // tokens travel to them (expert_dispatch.h); router and shared expert stay as under tp.
  ExpertParallel ep;
  ExpertDispatch dispatch = ExpertDispatch::kAuto;  // at ep.ep_size > 1

  int64_t local_num_experts() const { return num_experts / ep.ep_size; }
  int64_t local_intermediate_size() const { return intermediate_size / ep.moe_tp.size; }

  bool operator==(const MoeShape&) const = default;
};

// The config's routed experts: num_experts of width moe_intermediate_size, num_experts_per_tok
// of them per token, their weights renormalized iff norm_topk_prob; their tensors named `names`;
// no shared expert (an architecture with one adds it); at rank tp.rank of tp.size, with ep_size
// expert groups (check_expert_parallel has accepted it) reached by `dispatch`. The config must be
// a MoE one.
MoeShape moe_shape(const ModelConfig& config, MoeWeightNames names = {}, TensorParallel tp = {},
                   int ep_size = 1, ExpertDispatch dispatch = ExpertDispatch::kAuto);

class MoeMlp {
 public:
  // Activations every layer's block shares, for up to max_num_tokens rows.
  struct Scratch {
    Buffer router_logits;  // f32 [N, E]
    Buffer topk_weights;   // f32 [N, k]
    Buffer topk_ids;       // i32 [N, k]
    Buffer workspace;      // fused_moe's, for N tokens and the rank's experts (not all-to-all)
    Buffer out;            // [N, H], with a shared expert: the experts' sum (else in place)
    Buffer shared;         // [N, H]: the shared expert's input, then its output (if any)
    DenseMlp::Scratch shared_mlp;
    // Expert parallelism only: the exchange's (all-to-all), or the rank's routing with the other
    // ranks' experts masked (all-reduce).
    ExpertDispatchScratch dispatch;
    Buffer local_ids;  // i32 [N, k]
    Buffer slice_out;  // [S, H]: the rank's token slice's routed output (no shared expert)
    Buffer gathered;   // [R * S, H]: every rank's slice_out
    Buffer normed;     // [min(N, kNormFoldMaxRows), H], on CUDA: the folded input norm's output
  };
  static void plan_scratch(const MoeShape& shape, int64_t max_num_tokens, DType dtype,
                           Device device, Scratch& scratch, ActivationPlan& plan);

  explicit MoeMlp(MoeShape shape);

  // Loads, under `prefix` + names.block (prefix e.g. "model.layers.3."): the router `gate`, every
  // expert's gate / up / down (stacked into [E, 2I, H] and [E, H, I]) and, with a shared expert,
  // `shared_expert.*` and `shared_expert_gate.weight`. In the loader's check-only mode, checks
  // them.
  Status load(WeightLoader& weights, const std::string& prefix);

  // hidden: [n, H], the normed input; overwritten with the block's output (all-reduced over
  // `comm` at tp > 1; at ep > 1 the tokens exchanged over it, the same bits on every rank, or
  // the ranks' experts' outputs all-reduced: ExpertDispatch). With reduce_results false, a
  // block that would end in that all-reduce (all but the token exchange) leaves it to the
  // caller: true when hidden holds the rank's partial sum.
  // input_norm: the norm before the block, folded into the router (which then reads
  // rms_norm(input_norm->residual_in + hidden), kernels/norm_linear.h, and leaves it in
  // scratch.normed for the experts), where folds_input_norm says it can be.
  bool forward(const Tensor& hidden, const Scratch& scratch, backend::Stream stream,
               distributed::Communicator* comm = nullptr, bool reduce_results = true,
               const kernels::ResidualRmsNorm* input_norm = nullptr) const;

  // Whether forward can fold `norm` of `hidden` into its router.
  bool folds_input_norm(const Tensor& hidden, const kernels::ResidualRmsNorm& norm) const;

  const MoeShape& shape() const { return shape_; }

 private:
  static ExpertDispatchShape dispatch_shape(const MoeShape& shape);
  // Whether ep > 1 exchanges tokens (all-to-all) on `device`.
  static bool exchanges_tokens(const MoeShape& shape, Device device);
  // forward() at ep > 1, once the batch is routed (scratch.topk_*).
  void forward_expert_parallel(const Tensor& hidden, const Scratch& scratch, backend::Stream stream,
                               distributed::Communicator& comm) const;
  // With a shared expert: out [n, H] += its gated output (a partial sum at tp > 1).
  void add_shared_expert(const Tensor& hidden, const Scratch& scratch, const Tensor& out,
                         backend::Stream stream) const;

  MoeShape shape_;
  Linear router_;  // [E, H]
  // E below is the rank's experts (local_num_experts()), I its share of their rows
  // (local_intermediate_size()).
  Buffer w_gate_up_;                       // [E, 2I, H]: per expert gate rows, then up rows
  Buffer w_down_;                          // [E, H, I]
  std::optional<DenseMlp> shared_expert_;  // with shared_intermediate_size
  Buffer shared_expert_gate_;              // [1, H]
};

}  // namespace sgl::model
