// DenseMlp: a decoder layer's SwiGLU feed-forward block: gate|up projection, SiLU-and-mul, down
// projection.
#pragma once

#include <cstdint>
#include <string>

#include "backend/stream.h"
#include "core/buffer.h"
#include "core/status.h"
#include "core/tensor.h"
#include "model/layers/activation_plan.h"
#include "model/layers/linear.h"
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

  DenseMlp(int64_t hidden_size, int64_t intermediate_size)
      : hidden_size_(hidden_size), intermediate_size_(intermediate_size) {}

  // Loads `<prefix>{gate,up,down}_proj.weight` (prefix e.g. "model.layers.3.mlp."); in the
  // loader's check-only mode, checks them.
  Status load(WeightLoader& weights, const std::string& prefix);

  // hidden: [n, H], the normed input; overwritten with the block's output.
  void forward(const Tensor& hidden, const Scratch& scratch, backend::Stream stream) const;

  int64_t intermediate_size() const { return intermediate_size_; }

 private:
  int64_t hidden_size_;
  int64_t intermediate_size_;
  Linear gate_up_proj_;  // [2 * I, H]: gate rows, then up rows
  Linear down_proj_;     // [H, I]
};

}  // namespace sgl::model
