// Logit processing and prompt scoring on hand-computed rows: each penalty alone, their order
// together, the min_new_tokens mask, prefill chunks, ids outside the vocabulary; prompt logprobs
// from constructed rows; SamplingParams range checks for the new fields.
#include "sampling/logit_processor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "sampling/prompt_logprobs.h"

namespace sgl::sampling {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

const std::vector<float> kRow = {1.0f, -1.0f, 2.0f, 0.5f, -0.5f, 3.0f};
// prompt [0, 1], generated [2, 2, 3]
const std::vector<int32_t> kTokens = {0, 1, 2, 2, 3};

std::vector<float> processed(const SamplingParams& p, std::vector<int32_t> tokens = kTokens,
                             int32_t prompt_len = 2, std::vector<int32_t> stop_ids = {}) {
  std::vector<float> row = kRow;
  process_logits_row(row.data(), static_cast<int64_t>(row.size()),
                     {&p, tokens, prompt_len, stop_ids});
  return row;
}

TEST(LogitProcessor, RepetitionPenaltyScalesPromptAndGeneratedTokensOnce) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  // Tokens 0..3 were seen (token 2 twice, still scaled once): positive / 2, negative * 2.
  EXPECT_EQ(processed(p), (std::vector<float>{0.5f, -2.0f, 1.0f, 0.25f, -0.5f, 3.0f}));
  p.repetition_penalty = 0.5f;  // < 1 favours repeats
  EXPECT_EQ(processed(p), (std::vector<float>{2.0f, -0.5f, 4.0f, 1.0f, -0.5f, 3.0f}));
}

TEST(LogitProcessor, FrequencyAndPresenceCountOnlyGeneratedTokens) {
  SamplingParams p;
  p.frequency_penalty = 0.5f;
  // Token 2 twice: -1.0; token 3 once: -0.5; prompt tokens 0 and 1 untouched.
  EXPECT_EQ(processed(p), (std::vector<float>{1.0f, -1.0f, 1.0f, 0.0f, -0.5f, 3.0f}));
  p.frequency_penalty = 0.f;
  p.presence_penalty = 1.5f;  // once per distinct generated token
  EXPECT_EQ(processed(p), (std::vector<float>{1.0f, -1.0f, 0.5f, -1.0f, -0.5f, 3.0f}));
  p.presence_penalty = -2.f;  // negative values reward repeats
  EXPECT_EQ(processed(p), (std::vector<float>{1.0f, -1.0f, 4.0f, 2.5f, -0.5f, 3.0f}));
}

TEST(LogitProcessor, LogitBiasAddsAndIgnoresIdsOutsideTheVocabulary) {
  SamplingParams p;
  p.logit_bias = {{4, 1.5f}, {5, -3.f}, {6, 100.f}, {-1, 100.f}};
  EXPECT_EQ(processed(p), (std::vector<float>{1.0f, -1.0f, 2.0f, 0.5f, 1.0f, 0.0f}));
}

TEST(LogitProcessor, MinNewTokensMasksStopIdsUntilEnoughWereGenerated) {
  SamplingParams p;
  p.min_new_tokens = 4;  // 3 generated so far: masked
  EXPECT_EQ(processed(p, kTokens, 2, {5, 1, 9}),
            (std::vector<float>{1.0f, -kInf, 2.0f, 0.5f, -0.5f, -kInf}));
  p.min_new_tokens = 3;  // 3 generated: free again
  EXPECT_EQ(processed(p, kTokens, 2, {5, 1}), kRow);
  // A prefill (nothing generated yet) is masked; so is a prefill chunk that sees only part of
  // its prompt.
  EXPECT_EQ(processed(p, {0, 1}, 2, {5})[5], -kInf);
  EXPECT_EQ(processed(p, {0}, 7, {5})[5], -kInf);
}

TEST(LogitProcessor, PenaltiesApplyInOrderRepetitionFrequencyPresenceBiasMask) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  p.logit_bias = {{4, 1.5f}, {5, -3.f}};
  p.min_new_tokens = 4;
  // 0: 1/2; 1: masked; 2: 2/2 - (2*0.5 + 0.25); 3: 0.5/2 - (0.5 + 0.25); 4: -0.5 + 1.5;
  // 5: masked (after its bias).
  EXPECT_EQ(processed(p, kTokens, 2, {5, 1}),
            (std::vector<float>{0.5f, -kInf, -0.25f, -0.5f, 1.0f, -kInf}));
}

TEST(LogitProcessor, ChunkedPrefillHasNoGeneratedTokens) {
  SamplingParams p;
  p.frequency_penalty = 1.f;
  p.repetition_penalty = 2.f;
  // The chunk holds 3 of 5 prompt tokens: only repetition applies, to what it sees.
  EXPECT_EQ(processed(p, {0, 2, 2}, 5), (std::vector<float>{0.5f, -1.0f, 1.0f, 0.5f, -0.5f, 3.0f}));
}

TEST(LogitProcessor, BatchTouchesOnlyItsRows) {
  std::vector<float> data;
  for (int r = 0; r < 3; ++r) data.insert(data.end(), kRow.begin(), kRow.end());
  SamplingParams p;
  p.logit_bias = {{0, 10.f}};
  LogitProcessorBatch batch;
  batch.add(1, {&p, kTokens, 2, {}});
  process_logits(Tensor(data.data(), DType::kF32, {3, 6}), batch);
  EXPECT_EQ(data[0], 1.0f);
  EXPECT_EQ(data[6], 11.0f);
  EXPECT_EQ(data[12], 1.0f);
}

TEST(LogitProcessor, NeedsProcessingOnlyForNonDefaults) {
  SamplingParams p;
  EXPECT_FALSE(p.has_penalties_or_bias());
  p.min_new_tokens = 1;  // its mask is per step (exec_batch.cpp): not a penalty
  EXPECT_FALSE(p.has_penalties_or_bias());
  p = {};
  p.logit_bias = {{3, 0.5f}};
  EXPECT_TRUE(p.has_penalties_or_bias());
  EXPECT_FALSE(p.has_penalties());
  p = {};
  p.repetition_penalty = 1.1f;
  EXPECT_TRUE(p.has_penalties_or_bias());
}

TEST(SamplingParamsValidate, NewFieldsAreRangeChecked) {
  auto check = [](auto set) {
    SamplingParams p;
    set(p);
    return p.validate();
  };
  EXPECT_TRUE(check([](SamplingParams& p) { p.presence_penalty = 2.f; }).ok());
  EXPECT_FALSE(check([](SamplingParams& p) { p.presence_penalty = 2.5f; }).ok());
  EXPECT_FALSE(check([](SamplingParams& p) { p.frequency_penalty = -2.1f; }).ok());
  EXPECT_FALSE(check([](SamplingParams& p) { p.frequency_penalty = NAN; }).ok());
  EXPECT_FALSE(check([](SamplingParams& p) { p.repetition_penalty = 0.f; }).ok());
  EXPECT_TRUE(check([](SamplingParams& p) { p.repetition_penalty = 2.f; }).ok());
  EXPECT_FALSE(check([](SamplingParams& p) { p.repetition_penalty = 2.01f; }).ok());
  EXPECT_FALSE(check([](SamplingParams& p) { p.min_new_tokens = -1; }).ok());
  EXPECT_FALSE(check([](SamplingParams& p) { p.logit_bias = {{-3, 1.f}}; }).ok());
  EXPECT_FALSE(check([](SamplingParams& p) { p.logit_bias = {{3, 101.f}}; }).ok());
  const Status s = check([](SamplingParams& p) { p.presence_penalty = 5.f; });
  EXPECT_NE(s.message().find("presence_penalty"), std::string::npos) << s.message();
}

TEST(PromptLogprobs, ScoresEachRowAtItsTarget) {
  // Row 0: two equal logits -> log(1/2) each. Row 1: probabilities 3/4, 1/4, 0.
  const std::vector<float> logits = {0.f, 0.f, -kInf, std::log(3.f), 0.f, -kInf};
  const std::vector<int32_t> targets = {1, 1};
  PromptLogprobs out = score_prompt_tokens(logits.data(), 3, 7, targets, 2);
  EXPECT_EQ(out.begin, 7);
  EXPECT_EQ(out.end(), 9);
  ASSERT_EQ(out.size(), 2);
  EXPECT_NEAR(out.logprobs[0], std::log(0.5), 1e-6);
  EXPECT_NEAR(out.logprobs[1], std::log(0.25), 1e-6);
  ASSERT_EQ(out.top.size(), 2u);
  EXPECT_EQ(out.top[1][0].id, 0);
  EXPECT_NEAR(out.top[1][0].logprob, std::log(0.75), 1e-6);
  EXPECT_EQ(out.top[1][1].id, 1);
  EXPECT_TRUE(score_prompt_tokens(logits.data(), 3, 0, targets, 0).top.empty());
  EXPECT_TRUE(score_prompt_tokens(logits.data(), 3, 0, targets, 0).token_ids.empty());
}

TEST(PromptLogprobs, TokenIdsLogprobsPerRowInTheAskedOrder) {
  const std::vector<float> logits = {0.f, 0.f, -kInf, std::log(3.f), 0.f, -kInf};
  const std::vector<int32_t> targets = {1, 1}, ids = {2, 0};
  PromptLogprobs out = score_prompt_tokens(logits.data(), 3, 0, targets, 1, ids);
  ASSERT_EQ(out.token_ids.size(), 2u);
  EXPECT_EQ(out.token_ids[0][0], -kInf);
  EXPECT_NEAR(out.token_ids[0][1], std::log(0.5), 1e-6);
  EXPECT_NEAR(out.token_ids[1][1], std::log(0.75), 1e-6);
  EXPECT_EQ(out.token_ids[1][1], out.top[1][0].logprob);  // id 0 is row 1's top token
  PromptLogprobs all = score_prompt_tokens(logits.data(), 3, 0, {targets.data(), 1}, 0, ids);
  all.append(score_prompt_tokens(logits.data() + 3, 3, 1, {targets.data() + 1, 1}, 0, ids));
  EXPECT_EQ(all.token_ids, out.token_ids);
}

TEST(PromptLogprobs, AppendJoinsChunksInOrder) {
  PromptLogprobs all;
  all.append(PromptLogprobs{3, {-1.f, -2.f}, {}});
  all.append(PromptLogprobs{});
  all.append(PromptLogprobs{5, {-3.f}, {}});
  EXPECT_EQ(all.begin, 3);
  EXPECT_EQ(all.logprobs, (std::vector<float>{-1.f, -2.f, -3.f}));
}

}  // namespace
}  // namespace sgl::sampling
