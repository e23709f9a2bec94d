// CPU MoE routing: softmax or sigmoid scores, top-k (ties to the lower expert), optional
// renormalisation.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/moe_ops.h"

namespace sgl::kernels::cpu {
namespace {

void score_row(const float* logits, int64_t experts, MoeScoring scoring, float* scores) {
  if (scoring == MoeScoring::kSigmoid) {
    for (int64_t e = 0; e < experts; ++e) scores[e] = 1.0f / (1.0f + std::exp(-logits[e]));
    return;
  }
  float max = logits[0];
  for (int64_t e = 1; e < experts; ++e) max = std::fmax(max, logits[e]);
  float sum = 0.f;
  for (int64_t e = 0; e < experts; ++e) {
    scores[e] = std::exp(logits[e] - max);
    sum += scores[e];
  }
  for (int64_t e = 0; e < experts; ++e) scores[e] /= sum;
}

}  // namespace

void moe_route(const Tensor& router_logits, MoeScoring scoring, bool renormalize,
               const Tensor& topk_weights, const Tensor& topk_ids) {
  const int64_t tokens = router_logits.size(0), experts = router_logits.size(1);
  const int64_t k = topk_ids.size(1);
  const float* logits = router_logits.data<float>();
  float* weights = topk_weights.data<float>();
  int32_t* ids = topk_ids.data<int32_t>();
#pragma omp parallel if (tokens >= 64)
  {
    std::vector<float> scores(experts);
    std::vector<char> taken(experts);
#pragma omp for
    for (int64_t t = 0; t < tokens; ++t) {
      score_row(logits + t * router_logits.stride(0), experts, scoring, scores.data());
      std::fill(taken.begin(), taken.end(), 0);
      float* w = weights + t * k;
      int32_t* id = ids + t * k;
      float sum = 0.f;
      for (int64_t j = 0; j < k; ++j) {
        // Strictly greater keeps the lowest index among equal scores; NaN scores are never
        // preferred but `best` is always a real expert.
        int64_t best = -1;
        for (int64_t e = 0; e < experts; ++e) {
          if (!taken[e] && (best < 0 || scores[e] > scores[best])) best = e;
        }
        taken[best] = 1;
        id[j] = static_cast<int32_t>(best);
        w[j] = scores[best];
        sum += w[j];
      }
      if (renormalize) {
        for (int64_t j = 0; j < k; ++j) w[j] /= sum;
      }
    }
  }
}

void moe_local_ids(const Tensor& topk_ids, int64_t first_expert, int64_t num_local,
                   const Tensor& local_ids) {
  const int32_t* ids = topk_ids.data<int32_t>();
  int32_t* local = local_ids.data<int32_t>();
  for (int64_t i = 0; i < topk_ids.numel(); ++i) {
    const int64_t e = ids[i] - first_expert;
    local[i] = e >= 0 && e < num_local ? static_cast<int32_t>(e) : -1;
  }
}

}  // namespace sgl::kernels::cpu
