// DenseMlp: a decoder layer's SwiGLU feed-forward block: gate|up projection, SiLU-and-mul, down
// projection.
#pragma once

#include <cstdint>
#include <string>

#include "backend/stream.h"
#include "core/buffer.h"
#include "core/status.h"
#include "core/tensor.h"
#include "distributed/communicator.h"
#include "kernels/norm_linear.h"
#include "model/layers/activation_plan.h"
#include "model/layers/linear.h"
#include "model/layers/lora_batch.h"
#include "model/tensor_parallel.h"
#include "model/weight_loader.h"

namespace sgl::model {

class DenseMlp {
 public:
  // Activations every layer's block shares, for up to max_num_tokens rows.
  struct Scratch {
    Buffer gate_up;  // [N, 2 * I]
    Buffer act;      // [N, I]
  };
  static void plan_scratch(int64_t intermediate_size, int64_t max_num_tokens, DType dtype,
                           Scratch& scratch, ActivationPlan& plan);

  // intermediate_size: the checkpoint's (every rank's together). At tp > 1 gate|up is split by
  // intermediate rows and down by the matching columns; the output is all-reduced unless
  // reduce_results is false (SGLang's name: a shared expert, whose caller reduces once for both).
  DenseMlp(int64_t hidden_size, int64_t intermediate_size, TensorParallel tp = {},
           bool reduce_results = true)
      : hidden_size_(hidden_size),
        intermediate_size_(intermediate_size),
        tp_(tp),
        reduce_results_(reduce_results) {}

  // Loads `<prefix>{gate,up,down}_proj.weight` (prefix e.g. "model.layers.3.mlp."); in the
  // loader's check-only mode, checks them.
  Status load(WeightLoader& weights, const std::string& prefix);

  // hidden: [n, H], the normed input; overwritten with the block's output (all-reduced over
  // `comm` at tp > 1 with reduce_results and `reduce`, in `partial_sums` when given:
  // Linear::forward). Returns whether hidden is left as the rank's partial sum for the caller
  // to reduce (`reduce` or reduce_results false).
  // input_norm: the norm before the block, folded into the gate/up projection (which then reads
  // rms_norm(input_norm->residual_in + hidden): kernels/norm_linear.h), where folds_input_norm
  // says it can be. lora: the requests' adapters' updates after each projection in `layer`
  // (no norm folded; gate/up and the activation then run apart).
  bool forward(const Tensor& hidden, const Scratch& scratch, backend::Stream stream,
               distributed::Communicator* comm = nullptr, const Tensor& partial_sums = Tensor(),
               bool reduce = true, const kernels::ResidualRmsNorm* input_norm = nullptr,
               const LoraBatch* lora = nullptr, int64_t layer = 0) const;

  // Whether forward can fold `norm` of `hidden` into its gate/up projection.
  bool folds_input_norm(const Tensor& hidden, const kernels::ResidualRmsNorm& norm) const;

  // The rank's share of the intermediate size (what its scratch holds).
  int64_t intermediate_size() const { return intermediate_size_ / tp_.size; }

 private:
  int64_t hidden_size_;
  int64_t intermediate_size_;  // every rank's together
  TensorParallel tp_;
  bool reduce_results_;
  Linear gate_up_proj_;  // [2 * I / tp, H]: the rank's gate rows, then its up rows
  Linear down_proj_;     // [H, I / tp]
};

}  // namespace sgl::model
