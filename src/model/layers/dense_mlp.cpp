// DenseMlp: loading and the forward pass.
#include "model/layers/dense_mlp.h"

#include "kernels/activation.h"
#include "kernels/linear.h"

namespace sgl::model {

void DenseMlp::plan_scratch(int64_t intermediate_size, int64_t max_num_tokens, DType dtype,
                            Scratch& scratch, ActivationPlan& plan) {
  plan.add(&scratch.gate_up, dtype, max_num_tokens, 2 * intermediate_size);
  plan.add(&scratch.act, dtype, max_num_tokens, intermediate_size);
}

Status DenseMlp::load(WeightLoader& w, const std::string& prefix) {
  const LinearSpec gate_up{.modules = {prefix + "gate_proj", prefix + "up_proj"},
                           .out_features = {intermediate_size_, intermediate_size_},
                           .in_features = hidden_size_,
                           .shard = ShardRule::kColumn,
                           .tp = tp_};
  const LinearSpec down{.modules = {prefix + "down_proj"},
                        .out_features = {hidden_size_},
                        .in_features = intermediate_size_,
                        .shard = ShardRule::kRow,
                        .tp = tp_};
  SGL_RETURN_IF_ERROR(load_linear(w, gate_up, gate_up_proj_));
  return load_linear(w, down, down_proj_);
}

bool DenseMlp::folds_input_norm(const Tensor& hidden, const kernels::ResidualRmsNorm& norm) const {
  return kernels::norm_folds_into_linear(hidden, norm, gate_up_proj_.weight,
                                         kernels::FoldedProjection::kSiluAndMul);
}

bool DenseMlp::forward(const Tensor& hidden, const Scratch& scratch, backend::Stream stream,
                       distributed::Communicator* comm, const Tensor& partial_sums, bool reduce,
                       const kernels::ResidualRmsNorm* input_norm, const LoraBatch* lora,
                       int64_t layer) const {
  const int64_t n = hidden.size(0);
  const Tensor gate_up = scratch.gate_up.tensor().slice_rows(0, n);
  const Tensor act = scratch.act.tensor().slice_rows(0, n);
  if (lora != nullptr && !lora->empty()) {
    SGL_CHECK(input_norm == nullptr) << "a LoRA update reads the normed input: no norm folds";
    SGL_CHECK_EQ(tp_.size, 1);
    const int64_t width = intermediate_size();
    kernels::linear(hidden, gate_up_proj_.weight, Tensor(), gate_up, stream);
    lora->apply(layer, LoraModule::kGate, hidden, gate_up.slice_last(0, width), stream);
    lora->apply(layer, LoraModule::kUp, hidden, gate_up.slice_last(width, width), stream);
    kernels::silu_and_mul(gate_up, act, stream);
    const bool partial =
        down_proj_.forward(act, hidden, stream, comm, reduce_results_ && reduce, partial_sums);
    lora->apply(layer, LoraModule::kDown, act, hidden, stream);
    return partial;
  }
  // One fused kernel for decode-sized batches on CUDA (gate_up then stays untouched).
  if (input_norm != nullptr) {
    kernels::add_rms_norm_linear_silu_and_mul(hidden, *input_norm, gate_up_proj_.weight, act,
                                              stream);
  } else {
    kernels::linear_silu_and_mul(hidden, gate_up_proj_.weight, gate_up, act, stream);
  }
  return down_proj_.forward(act, hidden, stream, comm, reduce_results_ && reduce, partial_sums);
}

}  // namespace sgl::model
