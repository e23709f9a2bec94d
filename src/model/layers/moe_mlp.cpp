// MoeMlp: loading and the forward pass.
#include "model/layers/moe_mlp.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/copy.h"
#include "kernels/moe.h"

namespace sgl::model {

MoeShape moe_shape(const ModelConfig& config, MoeWeightNames names, TensorParallel tp, int ep_size,
                   ExpertDispatch dispatch) {
  SGL_CHECK(config.num_experts > 0)
      << "moe_shape of a dense config (" << config.architecture << ")";
  return MoeShape{.hidden_size = config.hidden_size,
                  .num_experts = config.num_experts,
                  .top_k = config.num_experts_per_tok,
                  .intermediate_size = config.moe_intermediate_size,
                  .renormalize = config.norm_topk_prob,
                  .names = std::move(names),
                  .tp = tp,
                  .ep = expert_parallel(tp, ep_size),
                  .dispatch = dispatch};
}

ExpertDispatchShape MoeMlp::dispatch_shape(const MoeShape& s) {
  return {.hidden_size = s.hidden_size,
          .top_k = s.top_k,
          .local_experts = s.local_num_experts(),
          .local_intermediate_size = s.local_intermediate_size(),
          .ep = s.ep,
          .ranks = s.tp.size};
}

bool MoeMlp::exchanges_tokens(const MoeShape& s, Device device) {
  return s.ep.ep_size > 1 &&
         resolve_expert_dispatch(s.dispatch, device) == ExpertDispatch::kAllToAll;
}

void MoeMlp::plan_scratch(const MoeShape& s, int64_t max_num_tokens, DType dtype, Device device,
                          Scratch& scratch, ActivationPlan& plan) {
  const int64_t n = max_num_tokens;
  plan.add(&scratch.router_logits, DType::kF32, n, s.num_experts);
  plan.add(&scratch.topk_weights, DType::kF32, n, s.top_k);
  plan.add(&scratch.topk_ids, DType::kI32, n, s.top_k);
  if (exchanges_tokens(s, device)) {
    plan_expert_dispatch(dispatch_shape(s), n, dtype, device, scratch.dispatch, plan);
    if (s.shared_intermediate_size == 0) {
      const int64_t per_rank = token_slice(n, 0, s.tp.size).per_rank;
      plan.add(&scratch.slice_out, dtype, per_rank, s.hidden_size);
      plan.add(&scratch.gathered, dtype, s.tp.size * per_rank, s.hidden_size);
    }
  } else {
    if (s.ep.ep_size > 1) plan.add(&scratch.local_ids, DType::kI32, n, s.top_k);
    const int64_t workspace = kernels::fused_moe_workspace_bytes(
        device, n, s.top_k, s.local_num_experts(), s.hidden_size, s.local_intermediate_size());
    plan.add(&scratch.workspace, DType::kF32, 1, std::max<int64_t>(1, (workspace + 3) / 4));
  }
  if (device.is_cuda() && !exchanges_tokens(s, device)) {
    plan.add(&scratch.normed, dtype, std::min(n, kernels::kNormFoldMaxRows), s.hidden_size);
  }
  if (s.shared_intermediate_size > 0) {
    plan.add(&scratch.out, dtype, n, s.hidden_size);
    plan.add(&scratch.shared, dtype, n, s.hidden_size);
    DenseMlp::plan_scratch(s.shared_intermediate_size / s.tp.size, n, dtype, scratch.shared_mlp,
                           plan);
  }
}

MoeMlp::MoeMlp(MoeShape shape) : shape_(std::move(shape)) {
  if (shape_.shared_intermediate_size > 0) {
    // Its partial sum joins the experts' before the block's one all-reduce.
    shared_expert_.emplace(shape_.hidden_size, shape_.shared_intermediate_size, shape_.tp,
                           /*reduce_results=*/false);
  }
}

Status MoeMlp::load(WeightLoader& w, const std::string& prefix) {
  const MoeShape& s = shape_;
  const std::string block = prefix + s.names.block;
  const LinearSpec router{.modules = {block + "gate"},
                          .out_features = {s.num_experts},
                          .in_features = s.hidden_size,
                          .shard = ShardRule::kReplicated};
  SGL_RETURN_IF_ERROR(load_linear(w, router, router_));
  // The rank's experts: all of them, or at ep > 1 its group's.
  const ShardRange experts = local_experts(s.num_experts, s.ep);
  std::vector<std::string> gate_up, down;
  for (int64_t e = 0; e < s.num_experts; ++e) {
    const std::string expert = block + "experts." + std::to_string(e) + ".";
    const std::string names[] = {expert + s.names.gate_proj + ".weight",
                                 expert + s.names.up_proj + ".weight",
                                 expert + s.names.down_proj + ".weight"};
    if (e < experts.start || e >= experts.start + experts.size) {
      for (const std::string& name : names) w.expect_unread(name);  // another group's expert
      continue;
    }
    gate_up.push_back(names[0]);
    gate_up.push_back(names[1]);
    down.push_back(names[2]);
  }
  const int64_t e = experts.size, h = s.hidden_size, i = s.intermediate_size;
  // Each expert's gate and up split by intermediate rows, its down by the matching columns, as a
  // dense MLP's column / row shard rules split them, between the ranks that share the expert.
  TensorSlice rows, cols;  // whole when one rank holds the expert
  if (s.ep.moe_tp.size > 1) {
    SGL_ASSIGN_OR_RETURN(const ShardRange r,
                         shard_of(i, i, s.ep.moe_tp, block + "experts' intermediate size"));
    rows = {.dim = 0, .start = r.start, .size = r.size};
    cols = {.dim = 1, .start = r.start, .size = r.size};
  }
  const int64_t local = s.local_intermediate_size();
  SGL_RETURN_IF_ERROR(
      w.store(w_gate_up_, w.load_stacked(gate_up, {i, h}, {e, 2 * local, h}, rows)));
  SGL_RETURN_IF_ERROR(w.store(w_down_, w.load_stacked(down, {h, i}, {e, h, local}, cols)));
  if (shared_expert_) {
    SGL_RETURN_IF_ERROR(shared_expert_->load(w, block + "shared_expert."));
    SGL_RETURN_IF_ERROR(
        w.store(shared_expert_gate_, w.load(block + "shared_expert_gate.weight", {1, h})));
  }
  return Status::ok_status();
}

bool MoeMlp::folds_input_norm(const Tensor& hidden, const kernels::ResidualRmsNorm& norm) const {
  return !exchanges_tokens(shape_, hidden.device()) &&
         kernels::norm_folds_into_linear(hidden, norm, router_.weight,
                                         kernels::FoldedProjection::kLinear);
}

bool MoeMlp::forward(const Tensor& hidden, const Scratch& scratch, backend::Stream stream,
                     distributed::Communicator* comm, bool reduce_results,
                     const kernels::ResidualRmsNorm* input_norm) const {
  const int64_t n = hidden.size(0);
  const Tensor logits = scratch.router_logits.tensor().slice_rows(0, n);
  const Tensor weights = scratch.topk_weights.tensor().slice_rows(0, n);
  const Tensor ids = scratch.topk_ids.tensor().slice_rows(0, n);
  // NOTE: the router logits are f32 whatever the activation dtype; transformers runs the router
  // in the model's dtype (bf16 logits) and only the softmax in f32. The f32 logits are the
  // float32 reference's, and pick its experts where bf16 rounding would tie or swap them.
  SGL_CHECK(input_norm == nullptr || !exchanges_tokens(shape_, hidden.device()))
      << "the token exchange takes no folded norm";
  // The experts' input: hidden, or the folded norm's output.
  Tensor input = hidden;
  if (input_norm != nullptr) {
    input = scratch.normed.tensor().slice_rows(0, n);
    kernels::add_rms_norm_linear(hidden, *input_norm, router_.weight, Tensor(), logits, input,
                                 stream);
  } else {
    router_.forward(hidden, logits, stream);  // replicated: no collective
  }
  kernels::moe_route(logits, kernels::MoeScoring::kSoftmax, shape_.renormalize, weights, ids,
                     stream);
  // At tp > 1 each rank's experts hold part of every expert's intermediate rows: the combine
  // (and the shared expert's gated output) are partial sums, added up once at the end.
  // (A communicator at one rank reduces too: the identity, its single-rank test.)
  const bool reduce = shape_.tp.size > 1 || comm != nullptr;
  SGL_CHECK(!reduce || comm != nullptr)
      << "a MoE block at tp " << shape_.tp.size << " needs a communicator";
  if (exchanges_tokens(shape_, hidden.device())) {
    forward_expert_parallel(hidden, scratch, stream, *comm);
    return false;
  }
  // Expert parallelism by all-reduce: the pairs routed to other ranks' experts are masked, and
  // the all-reduce below adds every rank's experts up (as it adds tensor parallelism's partial
  // sums).
  Tensor expert_ids = ids;
  const bool masked = shape_.ep.ep_size > 1;
  if (masked) {
    const ShardRange experts = local_experts(shape_.num_experts, shape_.ep);
    expert_ids = scratch.local_ids.tensor().slice_rows(0, n);
    kernels::moe_local_ids(ids, experts.start, experts.size, expert_ids, stream);
  }
  if (!shared_expert_) {
    kernels::fused_moe(input, w_gate_up_, w_down_, weights, expert_ids, scratch.workspace, hidden,
                       stream, masked);
  } else {
    const Tensor out = scratch.out.tensor().slice_rows(0, n);
    kernels::fused_moe(input, w_gate_up_, w_down_, weights, expert_ids, scratch.workspace, out,
                       stream, masked);
    add_shared_expert(input, scratch, out, stream);
    kernels::copy(out, hidden, stream);
  }
  if (!reduce) return false;
  if (!reduce_results) return true;  // hidden: the rank's partial sum
  comm->all_reduce(hidden, distributed::ReduceOp::kSum, stream);
  return false;
}

void MoeMlp::add_shared_expert(const Tensor& hidden, const Scratch& scratch, const Tensor& out,
                               backend::Stream stream) const {
  const int64_t n = hidden.size(0);
  // The dense block overwrites its input: it runs on a copy, the gate reads the original.
  const Tensor shared = scratch.shared.tensor().slice_rows(0, n);
  kernels::copy(hidden, shared, stream);
  shared_expert_->forward(shared, scratch.shared_mlp, stream);
  // The gate reads the whole hidden state, so it scales each rank's partial sum alike.
  kernels::add_sigmoid_gated(hidden, shared_expert_gate_, shared, out, stream);
}

// Every rank routed the whole batch (the router is replicated, so the ids agree, and
// --enable-return-routed-experts records them all); each computes its token slice's routed
// output through the exchange, and the slices are put back together on every rank.
void MoeMlp::forward_expert_parallel(const Tensor& hidden, const Scratch& scratch,
                                     backend::Stream stream,
                                     distributed::Communicator& comm) const {
  const int64_t n = hidden.size(0);
  const Tensor weights = scratch.topk_weights.tensor().slice_rows(0, n);
  const Tensor ids = scratch.topk_ids.tensor().slice_rows(0, n);
  const TokenSlice slice = token_slice(n, comm.rank(), comm.size());
  const ExpertDispatchShape shape = dispatch_shape(shape_);
  if (!shared_expert_) {
    // Rank r's rows land at r * per_rank: the first n gathered rows are the batch in order (a
    // short slice's tail rows land past n, unread).
    const Tensor mine = scratch.slice_out.tensor().slice_rows(0, slice.per_rank);
    expert_parallel_moe(hidden, weights, ids, w_gate_up_, w_down_, shape, scratch.dispatch,
                        mine.slice_rows(0, slice.size), comm, stream);
    const Tensor all = scratch.gathered.tensor().slice_rows(0, comm.size() * slice.per_rank);
    comm.all_gather(mine, all, stream);
    kernels::copy(all.slice_rows(0, n), hidden, stream);
    return;
  }
  // The shared expert is tensor-parallel (a partial sum at every rank), so one all-reduce
  // completes both: the routed output enters it at its slice's rows, zeros elsewhere.
  const Tensor out = scratch.out.tensor().slice_rows(0, n);
  kernels::zero(out, stream);
  expert_parallel_moe(hidden, weights, ids, w_gate_up_, w_down_, shape, scratch.dispatch,
                      out.slice_rows(slice.start, slice.size), comm, stream);
  add_shared_expert(hidden, scratch, out, stream);
  comm.all_reduce(out, distributed::ReduceOp::kSum, stream);
  kernels::copy(out, hidden, stream);
}

}  // namespace sgl::model
