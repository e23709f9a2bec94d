// The requests the tensor-parallel tests (CPU and CUDA) run through a BatchGenerator: a golden
// model's cases as greedy requests plus one seeded sampled request, and the generation itself.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/batch_generator.h"
#include "runner/model_runner.h"
#include "test_data.h"
#include "top_logprobs_check.h"

namespace sgl::test {

// The golden cases of `model` as greedy requests of 5 tokens, plus one seeded sampled request.
inline std::vector<engine::GenerateRequest> parallel_requests_of(const std::string& model) {
  const nlohmann::json golden = test::golden(model);
  std::vector<engine::GenerateRequest> requests;
  for (const auto& c : golden["cases"]) requests.push_back(test::greedy_request(c, 5));
  engine::GenerateRequest sampled = requests[0];
  sampled.sampling.temperature = 0.8f;
  sampled.sampling.top_p = 0.9f;
  sampled.sampling.seed = 77;
  requests.push_back(sampled);
  return requests;
}

// `reqs` through one BatchGenerator on `runner` (a failure is a test failure and no results).
inline std::vector<engine::GenerateResult> generate_all(
    runner::ModelRunner& runner, const std::vector<engine::GenerateRequest>& reqs) {
  engine::BatchGenerator generator(runner, runner.config().eos_token_ids);
  auto results = generator.generate(reqs);
  EXPECT_TRUE(results.ok()) << results.status().to_string();
  return results.ok() ? std::move(results).value() : std::vector<engine::GenerateResult>{};
}

}  // namespace sgl::test
