// ScoreHead: a classification or reward model's task head (Architecture::task_head) over each
// request's last hidden state (SGLang's score_and_pool with LAST pooling, no normalisation).
#pragma once

#include <cstdint>

#include "backend/stream.h"
#include "core/buffer.h"
#include "core/status.h"
#include "core/tensor.h"
#include "model/architectures.h"
#include "model/layers/activation_plan.h"
#include "model/layers/linear.h"
#include "model/weight_loader.h"

namespace sgl::model {

class ScoreHead {
 public:
  // Activations for up to `rows` requests.
  struct Scratch {
    Buffer hidden;  // kRewardModel: [rows, H], the first projection's output
  };

  // kind: kSequenceClassification or kRewardModel; num_outputs: the config's labels.
  ScoreHead(TaskHead kind, int64_t hidden_size, int64_t num_outputs);

  void plan_scratch(int64_t rows, DType dtype, Scratch& scratch, ActivationPlan& plan) const;

  // Loads the checkpoint's top-level `score` tensors (every tensor-parallel rank holds them
  // whole): kSequenceClassification `score.weight` [N, H] and `score.bias` [N] where the
  // checkpoint has one; kRewardModel `score.0.{weight,bias}` [H, H] / [H] and
  // `score.2.{weight,bias}` [1, H] / [1].
  Status load(WeightLoader& weights);

  // last: [B, H] in the activation dtype (the final norm's output at each request's last
  // token) -> out: f32 [B, N].
  void forward(const Tensor& last, const Tensor& out, const Scratch& scratch,
               backend::Stream stream) const;

 private:
  TaskHead kind_;
  int64_t hidden_size_;
  int64_t num_outputs_;
  Linear score_;   // kSequenceClassification: [N, H]; kRewardModel: score.0 [H, H]
  Linear output_;  // kRewardModel: score.2 [1, H]
};

}  // namespace sgl::model
