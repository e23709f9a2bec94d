// Drains a RequestStream into what the request produced (the engine tests' shared helper).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/request_stream.h"

namespace sgl::test {

struct Outcome {
  std::vector<int32_t> ids;
  std::vector<float> logprobs;
  std::vector<std::vector<sampling::TokenLogprob>> top;
  std::vector<std::vector<float>> token_ids;  // token_ids_logprob, per token
  std::optional<sampling::PromptLogprobs> input;
  scheduler::FinishState finish;
  engine::Usage usage;
};

// Reads events until the finish (a test failure after 60 s without one).
inline Outcome collect(engine::RequestStream& stream) {
  Outcome out;
  for (;;) {
    auto event = stream.next(std::chrono::seconds(60));
    if (!event) {
      ADD_FAILURE() << "stream " << stream.rid() << " timed out";
      return out;
    }
    out.ids.insert(out.ids.end(), event->token_ids.begin(), event->token_ids.end());
    out.logprobs.insert(out.logprobs.end(), event->logprobs.begin(), event->logprobs.end());
    out.top.insert(out.top.end(), event->top_logprobs.begin(), event->top_logprobs.end());
    out.token_ids.insert(out.token_ids.end(), event->token_ids_logprobs.begin(),
                         event->token_ids_logprobs.end());
    if (event->input_logprobs) {
      EXPECT_FALSE(out.input.has_value()) << "prompt logprobs delivered twice";
      out.input = std::move(event->input_logprobs);
    }
    out.usage = event->usage;
    if (event->finished) {
      out.finish = *event->finished;
      return out;
    }
  }
}

// Submits every request (all queued before any is read), then drains each stream in order; a
// refused submission is a test failure and has no outcome.
inline std::vector<Outcome> submit_and_collect(
    engine::Engine& engine, const std::vector<scheduler::GenerateRequest>& requests) {
  std::vector<std::shared_ptr<engine::RequestStream>> streams;
  for (const scheduler::GenerateRequest& r : requests) {
    auto s = engine.submit(r);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (s.ok()) streams.push_back(*s);
  }
  std::vector<Outcome> out;
  for (auto& s : streams) out.push_back(collect(*s));
  return out;
}

// Two runs of one workload (speculative and plain) gave each request the same tokens and finish,
// and logprobs (token_ids_logprob values too) within `tol`: a verify pass computes a position's
// logits beside other positions, the same math up to the summation order of a wider GEMM.
inline void expect_same_outcomes(const std::vector<Outcome>& got, const std::vector<Outcome>& want,
                                 double tol, const std::string& label) {
  ASSERT_EQ(got.size(), want.size()) << label;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].ids, want[i].ids) << label << ": request " << i;
    EXPECT_EQ(got[i].finish.reason, want[i].finish.reason) << label << ": request " << i;
    ASSERT_EQ(got[i].logprobs.size(), want[i].logprobs.size()) << label << ": request " << i;
    for (size_t k = 0; k < want[i].logprobs.size(); ++k) {
      EXPECT_NEAR(got[i].logprobs[k], want[i].logprobs[k], tol) << i << " step " << k;
    }
    ASSERT_EQ(got[i].top.size(), want[i].top.size()) << label << ": request " << i;
    ASSERT_EQ(got[i].token_ids.size(), want[i].token_ids.size()) << label << ": request " << i;
    for (size_t k = 0; k < want[i].token_ids.size(); ++k) {
      ASSERT_EQ(got[i].token_ids[k].size(), want[i].token_ids[k].size()) << i << " step " << k;
      for (size_t j = 0; j < want[i].token_ids[k].size(); ++j) {
        EXPECT_NEAR(got[i].token_ids[k][j], want[i].token_ids[k][j], tol) << i << " step " << k;
      }
    }
  }
}

}  // namespace sgl::test
