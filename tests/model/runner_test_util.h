// Test helpers for whole-model checks through ModelRunner: one prefill's logits, and the largest
// difference between two logit vectors.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "cache/req_to_token_pool.h"
#include "cache/token_to_kv_pool_allocator.h"
#include "runner/forward_batch_builder.h"
#include "runner/model_runner.h"

namespace sgl::model::test_util {

// Logits f32 [ids.size(), vocab] of one prefill over `ids` (at most the runner's max_num_tokens).
inline std::vector<float> prefill_logits(runner::ModelRunner& runner,
                                         const std::vector<int32_t>& ids) {
  cache::ReqToTokenPool req_to_token(2, static_cast<int32_t>(runner.context_length()));
  cache::TokenToKvPoolAllocator kv(static_cast<int32_t>(runner.num_kv_slots()));
  runner::ForwardBatchBuilder builder(runner.allocator(),
                                      std::max<int64_t>(64, static_cast<int64_t>(ids.size())), 4,
                                      req_to_token.table());
  const int32_t row = *req_to_token.alloc();
  const std::vector<int32_t> slots = *kv.alloc(static_cast<int32_t>(ids.size()));
  req_to_token.write(row, 0, slots);
  const runner::BatchRequest request{row, 0, ids, slots};
  const ForwardBatch fb = builder.build(ForwardMode::kExtend, LogitsMode::kAllTokens,
                                        std::span(&request, 1), runner.stream());
  const Tensor logits = runner.forward_logits(fb);
  const float* p = logits.data<float>();
  return std::vector<float>(p, p + logits.numel());
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  }
  return m;
}

}  // namespace sgl::model::test_util
