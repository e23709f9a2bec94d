// ModelOutput's hidden states: on request, the LM head's input for the logits rows (logits ==
// hidden_states x head^T), for each logits mode and batch kind; absent otherwise.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cache/req_to_token_pool.h"
#include "cache/token_to_kv_pool_allocator.h"
#include "model/weight_source.h"
#include "runner/forward_batch_builder.h"
#include "runner/model_runner.h"
#include "test_data.h"

namespace sgl {
namespace {

struct Fixture {
  std::unique_ptr<runner::ModelRunner> runner;
  std::vector<float> head;  // [vocab, hidden] the LM head as the checkpoint stores it
};

Fixture make(const std::string& model) {
  Fixture f;
  runner::ModelRunnerOptions options;
  options.dtype = "float32";
  options.max_num_tokens = 64;
  options.max_batch_size = 4;
  options.num_kv_slots = 256;
  auto r = runner::ModelRunner::create(test::model_dir(model), options);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok()) return f;
  f.runner = std::move(r).value();
  const model::ModelConfig& c = f.runner->config();
  auto source = model::SafetensorsWeightSource::open(test::model_dir(model));
  EXPECT_TRUE(source.ok()) << source.status().to_string();
  if (!source.ok()) return f;
  const std::string name = c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  f.head.resize(static_cast<size_t>(c.vocab_size * c.hidden_size));
  EXPECT_TRUE((*source)->read_f32(name, {c.vocab_size, c.hidden_size}, f.head.data()).ok());
  return f;
}

// Every logits row equals its hidden row times the LM head.
void expect_logits_from_hidden(const model::ModelOutput& out, const std::vector<float>& head,
                               int64_t rows, int64_t hidden, int64_t vocab) {
  ASSERT_TRUE(out.hidden_states.defined());
  ASSERT_EQ(out.hidden_states.size(0), rows);
  ASSERT_EQ(out.hidden_states.size(1), hidden);
  ASSERT_EQ(out.logits.size(0), rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* h = out.hidden_states.data<float>() + r * hidden;
    for (int64_t v = 0; v < vocab; ++v) {
      double dot = 0;
      for (int64_t k = 0; k < hidden; ++k) dot += double{h[k]} * head[v * hidden + k];
      ASSERT_NEAR(out.logits.data<float>()[r * vocab + v], dot, 1e-4)
          << "row " << r << " vocab " << v;
    }
  }
}

class ModelOutputTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelOutputTest, HiddenStatesAreTheLmHeadInput) {
  Fixture f = make(GetParam());
  ASSERT_TRUE(f.runner);
  const model::ModelConfig& c = f.runner->config();
  cache::ReqToTokenPool req_to_token(4, static_cast<int32_t>(f.runner->context_length()));
  cache::TokenToKvPoolAllocator kv(static_cast<int32_t>(f.runner->num_kv_slots()));
  runner::ForwardBatchBuilder builder(f.runner->allocator(), 64, 4, req_to_token.table());

  const std::vector<int32_t> ids_a = {1, 5, 9, 2, 7}, ids_b = {3, 4, 8};
  std::vector<runner::BatchRequest> requests;
  std::vector<std::vector<int32_t>> slots;
  for (const auto* ids : {&ids_a, &ids_b}) {
    const int32_t row = *req_to_token.alloc();
    slots.push_back(*kv.alloc(static_cast<int32_t>(ids->size())));
    req_to_token.write(row, 0, slots.back());
    requests.push_back({row, 0, *ids, slots.back()});
  }
  for (LogitsMode mode : {LogitsMode::kLastPerRequest, LogitsMode::kAllTokens}) {
    ForwardBatch fb = builder.build(ForwardMode::kExtend, mode, requests, f.runner->stream());
    EXPECT_FALSE(f.runner->forward(fb).hidden_states.defined());
    fb.capture_hidden_mode = CaptureHiddenMode::kLast;
    const model::ModelOutput out = f.runner->forward(fb);
    expect_logits_from_hidden(out, f.head, fb.num_logit_rows(), c.hidden_size, c.vocab_size);
  }

  // One decode step for both requests.
  std::vector<runner::BatchRequest> decode;
  const std::vector<int32_t> next_a = {6}, next_b = {11};
  for (size_t i = 0; i < requests.size(); ++i) {
    slots.push_back(*kv.alloc(1));
    const auto prefix = static_cast<int32_t>(requests[i].input_ids.size());
    req_to_token.write(requests[i].req_pool_idx, prefix, slots.back());
    decode.push_back({requests[i].req_pool_idx, prefix, i == 0 ? next_a : next_b, slots.back()});
  }
  ForwardBatch fb =
      builder.build(ForwardMode::kDecode, LogitsMode::kLastPerRequest, decode, f.runner->stream());
  fb.capture_hidden_mode = CaptureHiddenMode::kLast;
  expect_logits_from_hidden(f.runner->forward(fb), f.head, 2, c.hidden_size, c.vocab_size);
}

INSTANTIATE_TEST_SUITE_P(Models, ModelOutputTest,
                         ::testing::Values("tiny-llama", "tiny-llama-tied", "tiny-qwen3"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) ch = ch == '-' ? '_' : ch;
                           return name;
                         });

}  // namespace
}  // namespace sgl
