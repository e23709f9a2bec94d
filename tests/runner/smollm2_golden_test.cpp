// The default model against transformers: SmolLM2-135M-Instruct.Q4_1.gguf, chat prompts rendered
// with the GGUF's own template. tests/runner/data/smollm2_golden.json was written by
// scripts/make_smollm2_golden.py (transformers' GGUF loader, float32 CPU math). On CPU (f32) the
// rendered text and prompt ids must be identical, the greedy ids identical and every step's top-5
// logprobs within 1e-3. Skipped when the GGUF is absent (scripts/fetch_default_model.sh).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/batch_generator.h"
#include "model/gguf.h"
#include "runner/model_runner.h"
#include "test_data.h"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/gguf_tokenizer.h"
#include "top_logprobs_check.h"

namespace sgl {
namespace {

namespace fs = std::filesystem;
constexpr double kLogprobTol = 1e-3;

nlohmann::json load_golden() {
  std::ifstream in(sgl::test::test_data_dir("runner") / "smollm2_golden.json");
  EXPECT_TRUE(in.good()) << "golden file missing";
  return nlohmann::json::parse(in);
}

class SmolLM2Golden : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = test::smollm2_gguf_path();
    std::error_code ec;
    if (!fs::is_regular_file(path_, ec)) {
      GTEST_SKIP() << path_ << " not found; run scripts/fetch_default_model.sh";
    }
    golden_ = load_golden();
    ASSERT_GE(golden_["cases"].size(), 6u);
  }
  // The tokenizer (and chat template) built from the GGUF's metadata; null on failure.
  std::unique_ptr<tokenizer::Tokenizer> load_tokenizer() const {
    Result<model::GgufFile> file = model::GgufFile::open(path_);
    EXPECT_TRUE(file.ok()) << file.status().to_string();
    if (!file.ok()) return nullptr;
    auto tok = tokenizer::tokenizer_from_gguf(*file);
    EXPECT_TRUE(tok.ok()) << tok.status().to_string();
    return tok.ok() ? std::move(tok).value() : nullptr;
  }
  fs::path path_;
  nlohmann::json golden_;
};

TEST_F(SmolLM2Golden, TemplateAndTokenizerGiveTheReferencePromptIds) {
  std::unique_ptr<tokenizer::Tokenizer> tok = load_tokenizer();
  ASSERT_TRUE(tok);
  const tokenizer::Tokenizer& t = *tok;
  for (size_t ci = 0; ci < golden_["cases"].size(); ++ci) {
    const nlohmann::json& c = golden_["cases"][ci];
    auto text =
        tokenizer::apply_chat_template(t.chat_template(), c["messages"].dump(), "", true,
                                       t.bos_token().value_or(""), t.eos_token().value_or(""));
    ASSERT_TRUE(text.ok()) << text.status().to_string();
    EXPECT_EQ(*text, c["text"].get<std::string>()) << "case " << ci;
    tokenizer::EncodeOptions options;
    options.add_special_tokens = false;
    EXPECT_EQ(t.encode(*text, options), c["prompt_ids"].get<std::vector<int32_t>>())
        << "case " << ci;
  }
}

// The five shared chat-template conversations (tools and a tool call included), rendered with the
// GGUF's template, byte for byte as transformers renders them.
TEST_F(SmolLM2Golden, TemplateRendersTheSharedConversationsLikeTransformers) {
  std::unique_ptr<tokenizer::Tokenizer> tok = load_tokenizer();
  ASSERT_TRUE(tok);
  const tokenizer::Tokenizer& t = *tok;
  ASSERT_EQ(golden_["template_cases"].size(), 5u);
  for (const auto& [name, entry] : golden_["template_cases"].items()) {
    const nlohmann::json& c = entry["case"];
    auto text = tokenizer::apply_chat_template(
        t.chat_template(), c["messages"].dump(), c.contains("tools") ? c["tools"].dump() : "",
        c["add_generation_prompt"].get<bool>(), t.bos_token().value_or(""),
        t.eos_token().value_or(""));
    ASSERT_TRUE(text.ok()) << name << ": " << text.status().to_string();
    EXPECT_EQ(*text, entry["text"].get<std::string>()) << name;
  }
}

TEST_F(SmolLM2Golden, GreedyIdsAndTop5LogprobsOnCpu) {
  runner::ModelRunnerOptions options;
  options.max_num_tokens = 256;
  options.max_batch_size = 8;
  options.num_kv_slots = 2048;
  options.context_length = 256;
  auto runner = runner::ModelRunner::create(path_, options);
  ASSERT_TRUE(runner.ok()) << runner.status().to_string();
  engine::BatchGenerator generator(**runner, (*runner)->config().eos_token_ids);

  // All cases in one batch: batching must not change any request's numbers.
  std::vector<engine::GenerateRequest> requests;
  for (const nlohmann::json& c : golden_["cases"]) requests.push_back(test::greedy_request(c, 5));
  auto results = generator.generate(requests);
  ASSERT_TRUE(results.ok()) << results.status().to_string();

  double worst = 0;
  for (size_t ci = 0; ci < requests.size(); ++ci) {
    const nlohmann::json& c = golden_["cases"][ci];
    const engine::GenerateResult& out = results->at(ci);
    ASSERT_EQ(out.output_ids, c["greedy_ids"].get<std::vector<int32_t>>()) << "case " << ci;
    ASSERT_EQ(out.top_logprobs.size(), c["steps_top5"].size());
    for (size_t s = 0; s < out.top_logprobs.size(); ++s) {
      worst = std::max(
          worst, test::expect_top_logprobs(
                     out.top_logprobs[s], c["steps_top5"][s]["ids"], c["steps_top5"][s]["logprobs"],
                     kLogprobTol, "case " + std::to_string(ci) + " step " + std::to_string(s)));
    }
  }
  std::cout << "SmolLM2 golden: " << requests.size() << " chats, worst top-5 logprob error "
            << worst << "\n";
}

}  // namespace
}  // namespace sgl
