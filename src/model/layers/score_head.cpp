// ScoreHead: loading and the forward pass.
#include "model/layers/score_head.h"

#include "core/check.h"
#include "kernels/activation.h"

namespace sgl::model {

ScoreHead::ScoreHead(TaskHead kind, int64_t hidden_size, int64_t num_outputs)
    : kind_(kind), hidden_size_(hidden_size), num_outputs_(num_outputs) {
  SGL_CHECK(kind != TaskHead::kLmHead) << "a score head for a causal LM";
  SGL_CHECK(kind != TaskHead::kRewardModel || num_outputs == 1) << "a reward model scores once";
}

void ScoreHead::plan_scratch(int64_t rows, DType dtype, Scratch& scratch,
                             ActivationPlan& plan) const {
  if (kind_ == TaskHead::kRewardModel) plan.add(&scratch.hidden, dtype, rows, hidden_size_);
}

Status ScoreHead::load(WeightLoader& w) {
  if (kind_ == TaskHead::kSequenceClassification) {
    // transformers' heads have no bias; SGLang's Qwen classifiers declare one, which a
    // checkpoint may carry.
    return load_linear(w,
                       {.modules = {"score"},
                        .out_features = {num_outputs_},
                        .in_features = hidden_size_,
                        .bias = w.has("score.bias"),
                        .shard = ShardRule::kReplicated},
                       score_);
  }
  SGL_RETURN_IF_ERROR(load_linear(w,
                                  {.modules = {"score.0"},
                                   .out_features = {hidden_size_},
                                   .in_features = hidden_size_,
                                   .bias = true,
                                   .shard = ShardRule::kReplicated},
                                  score_));
  return load_linear(w,
                     {.modules = {"score.2"},
                      .out_features = {1},
                      .in_features = hidden_size_,
                      .bias = true,
                      .shard = ShardRule::kReplicated},
                     output_);
}

void ScoreHead::forward(const Tensor& last, const Tensor& out, const Scratch& scratch,
                        backend::Stream stream) const {
  const int64_t b = last.size(0);
  SGL_CHECK(out.ndim() == 2 && out.size(0) == b && out.size(1) == num_outputs_)
      << "score head: " << last.shape_string() << " -> " << out.shape_string();
  if (kind_ == TaskHead::kSequenceClassification) {
    score_.forward(last, out, stream);
    return;
  }
  // The hidden layer in the activation dtype, as SGLang's bf16 nn.Sequential computes it.
  const Tensor hidden = scratch.hidden.tensor().slice_rows(0, b);  // [B, H]
  score_.forward(last, hidden, stream);
  kernels::relu(hidden, stream);
  output_.forward(hidden, out, stream);
}

}  // namespace sgl::model
