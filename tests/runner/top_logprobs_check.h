// The golden-parity check of one step's top-k logprobs and the golden case's request, shared
// by the parity tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/generate_request.h"
#include "sampling/sampler.h"

namespace sgl::test {

// A golden case ({"prompt_ids", "greedy_ids"}) as a greedy request that ignores EOS (the
// goldens do not stop at it) and returns its logprobs with `top_logprobs` alternatives.
inline engine::GenerateRequest greedy_request(const nlohmann::json& c, int32_t top_logprobs) {
  engine::GenerateRequest r;
  r.input_ids = c["prompt_ids"].get<std::vector<int32_t>>();
  r.max_new_tokens = static_cast<int32_t>(c["greedy_ids"].size());
  r.sampling.temperature = 0.f;
  r.ignore_eos = true;
  r.top_logprobs_num = top_logprobs;
  r.return_logprob = true;
  return r;
}

// Each reference (id, logprob) is found among ours with a logprob within tol, or is missing only
// because it lies within tol of our cutoff (our k-th logprob): near-equal neighbours may swap
// across the cutoff under numeric noise. Returns the largest error among the ids found.
inline double expect_top_logprobs(const std::vector<sampling::TokenLogprob>& ours,
                                  const nlohmann::json& ids, const nlohmann::json& logprobs,
                                  double tol, const std::string& where) {
  std::map<int32_t, float> by_id;
  for (const auto& e : ours) by_id[e.id] = e.logprob;
  double worst = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    const int32_t id = ids[k];
    const double ref = logprobs[k];
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      EXPECT_LE(ref, ours.back().logprob + tol) << where << ": id " << id << " (rank " << k
                                                << ") is missing from our top-" << ours.size();
      continue;
    }
    worst = std::max(worst, std::abs(it->second - ref));
    EXPECT_NEAR(it->second, ref, tol) << where << ": id " << id << " rank " << k;
  }
  return worst;
}

}  // namespace sgl::test
