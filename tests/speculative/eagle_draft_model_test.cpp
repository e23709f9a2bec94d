// EagleDraftModel against scripts/make_eagle_heads.py's numpy reference: the random EAGLE and
// EAGLE-3 heads it writes for the tiny golden models, on their targets' shared embeddings (and
// LM head), run as one extend from position 0 (every row's logits and hidden states) and as a
// shorter extend followed by decode steps over the draft's own KV cache.
// Built with SGL_TEST_ON_CUDA: the same on the GPU in float32.
#include "model/eagle_draft_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "attention/attention_backend.h"
#include "attention/kv_pool.h"
#include "cache/req_to_token_pool.h"
#include "cache/token_to_kv_pool_allocator.h"
#include "core/allocator.h"
#include "core/buffer.h"
#include "eagle_heads.h"
#include "kernels/copy.h"
#include "model/weight_source.h"
#include "runner/forward_batch_builder.h"
#include "runner/model_runner.h"
#include "test_data.h"

namespace sgl {
namespace {

const std::filesystem::path kHeads = test::eagle_heads_dir();
constexpr int64_t kMaxTokens = 32;
constexpr int32_t kSlots = 64;
#ifdef SGL_TEST_ON_CUDA
const Device kDevice = Device::cuda(0);
#else
const Device kDevice = Device::cpu();
#endif

struct Reference {
  std::vector<int32_t> input_ids;
  int64_t hidden_width = 0;
  std::vector<float> hidden_states;             // [T, hidden_width]
  std::vector<std::vector<float>> logits;       // [T][draft vocab]
  std::vector<std::vector<float>> next_hidden;  // [T][H]
};

Reference read_reference(const std::filesystem::path& path) {
  const nlohmann::json j = test::read_json(path);
  Reference r;
  r.input_ids = j["input_ids"].get<std::vector<int32_t>>();
  for (const auto& row : j["hidden_states"]) {
    const auto values = row.get<std::vector<float>>();
    r.hidden_width = static_cast<int64_t>(values.size());
    r.hidden_states.insert(r.hidden_states.end(), values.begin(), values.end());
  }
  r.logits = j["logits"].get<std::vector<std::vector<float>>>();
  r.next_hidden = j["next_hidden_states"].get<std::vector<std::vector<float>>>();
  return r;
}

// `rows` rows of `device_out` (f32 [rows, width], written on `stream`) against the reference's
// rows from `first`.
void expect_rows(const Tensor& device_out, const std::vector<std::vector<float>>& want,
                 size_t first, int64_t rows, const char* what, backend::Stream stream) {
  Buffer host(cpu_allocator(), DType::kF32, {device_out.size(0), device_out.size(1)});
  kernels::copy(device_out, host, stream);  // waits for the stream
  const Tensor out = host.tensor();
  ASSERT_EQ(out.size(0), rows);
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<float>& w = want[first + static_cast<size_t>(r)];
    ASSERT_EQ(out.size(1), static_cast<int64_t>(w.size()));
    for (size_t v = 0; v < w.size(); ++v) {
      ASSERT_NEAR(out.data<float>()[r * out.size(1) + static_cast<int64_t>(v)], w[v],
                  2e-4 * (1 + std::abs(w[v])))
          << what << " row " << first + static_cast<size_t>(r) << " column " << v;
    }
  }
}

// The tiny target on the test's device in f32, sized for the references.
runner::ModelRunnerOptions target_options() {
  runner::ModelRunnerOptions options;
  options.dtype = "float32";
  options.device = kDevice;
  options.max_num_tokens = kMaxTokens;
  options.max_batch_size = 2;
  options.num_kv_slots = kSlots;
  return options;
}

class EagleDraftModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string head = GetParam();
    target_name_ = head.substr(0, head.rfind('-'));
    auto target = runner::ModelRunner::create(test::model_dir(target_name_), target_options());
    ASSERT_TRUE(target.ok()) << target.status().to_string();
    target_ = std::move(target).value();
    builder_ = std::make_unique<runner::ForwardBatchBuilder>(target_->allocator(), kMaxTokens, 2,
                                                             req_to_token_.table());

    const std::filesystem::path dir = kHeads / head;
    auto config = model::load_eagle_draft_config(dir);
    ASSERT_TRUE(config.ok()) << config.status().to_string();
    config_ = *config;
    auto source = model::SafetensorsWeightSource::open(dir);
    ASSERT_TRUE(source.ok()) << source.status().to_string();
    source_ = std::move(source).value();
    model::WeightLoader weights(source_.get(), target_->allocator(), DType::kF32,
                                target_->stream());
    auto draft = model::EagleDraftModel::load(config_, weights, target_->allocator(),
                                              model::ModelOptions{kMaxTokens, kMaxTokens, 0},
                                              target_->model().embed_and_head());
    ASSERT_TRUE(draft.ok()) << draft.status().to_string();
    draft_ = std::move(draft).value();

    // The draft's own KV: one layer, the same slot indices as the target's would be.
    const model::ModelConfig& c = config_.llama;
    kv_pool_ = std::make_unique<attention::KvPool>(
        target_->allocator(),
        attention::KvPoolShape{1, kSlots, c.num_key_value_heads, c.head_dim, DType::kF32});
    const attention::AttentionConfig attn{c.num_attention_heads, c.num_key_value_heads, c.head_dim,
                                          1.0f / std::sqrt(static_cast<float>(c.head_dim))};
    auto backend =
        attention::create_attention_backend("auto", kDevice, attn, *kv_pool_, target_->stream());
    ASSERT_TRUE(backend.ok()) << backend.status().to_string();
    attention_ = std::move(backend).value();
    reference_ = read_reference(dir / "reference.json");
  }

  // Runs tokens [begin, end) of the reference as one pass (prefix `begin` already cached).
  model::DraftOutput run(ForwardMode mode, LogitsMode logits, size_t begin, size_t end) {
    std::span<const int32_t> ids(reference_.input_ids.data() + begin, end - begin);
    std::span<const int32_t> slots(slots_.data() + begin, end - begin);
    req_to_token_.write(row_, static_cast<int32_t>(begin), slots);
    const runner::BatchRequest request{row_, static_cast<int32_t>(begin), ids, slots};
    ForwardBatch fb = builder_->build(mode, logits, std::span(&request, 1), target_->stream());
    const int64_t w = reference_.hidden_width;
    Tensor host(reference_.hidden_states.data() + static_cast<int64_t>(begin) * w, DType::kF32,
                {static_cast<int64_t>(end - begin), w});
    hidden_in_ = Buffer(target_->allocator(), DType::kF32, {host.size(0), w});
    kernels::copy(host, hidden_in_, target_->stream());
    model::ModelContext ctx{*attention_, target_->stream()};
    return draft_->forward(fb, hidden_in_, ctx);
  }

  std::string target_name_;
  std::unique_ptr<runner::ModelRunner> target_;
  model::EagleDraftConfig config_;
  std::unique_ptr<model::SafetensorsWeightSource> source_;
  std::unique_ptr<model::EagleDraftModel> draft_;
  std::unique_ptr<attention::KvPool> kv_pool_;
  std::unique_ptr<attention::AttentionBackend> attention_;
  Reference reference_;
  Buffer hidden_in_;
  cache::ReqToTokenPool req_to_token_{2, 64};
  std::unique_ptr<runner::ForwardBatchBuilder> builder_;
  int32_t row_ = *req_to_token_.alloc();
  cache::TokenToKvPoolAllocator kv_{kSlots};
  std::vector<int32_t> slots_ = *kv_.alloc(16);
};

TEST_P(EagleDraftModelTest, ExtendMatchesTheReference) {
  ASSERT_TRUE(draft_);
  const size_t t = reference_.input_ids.size();
  const model::DraftOutput out = run(ForwardMode::kExtend, LogitsMode::kAllTokens, 0, t);
  expect_rows(out.logits, reference_.logits, 0, static_cast<int64_t>(t), "logits",
              target_->stream());
  expect_rows(out.hidden_states, reference_.next_hidden, 0, static_cast<int64_t>(t), "hidden",
              target_->stream());
}

// An extend of all but the last three tokens (its last row only), then one decode step each:
// the draft's K/V stored by each pass is what the next attends over.
TEST_P(EagleDraftModelTest, DecodeStepsAfterAnExtendMatchTheReference) {
  ASSERT_TRUE(draft_);
  const size_t t = reference_.input_ids.size(), prefix = t - 3;
  model::DraftOutput out = run(ForwardMode::kExtend, LogitsMode::kLastPerRequest, 0, prefix);
  expect_rows(out.logits, reference_.logits, prefix - 1, 1, "extend logits", target_->stream());
  expect_rows(out.hidden_states, reference_.next_hidden, prefix - 1, 1, "extend hidden",
              target_->stream());
  for (size_t i = prefix; i < t; ++i) {
    out = run(ForwardMode::kDecode, LogitsMode::kLastPerRequest, i, i + 1);
    expect_rows(out.logits, reference_.logits, i, 1, "decode logits", target_->stream());
    expect_rows(out.hidden_states, reference_.next_hidden, i, 1, "decode hidden",
                target_->stream());
  }
}

TEST_P(EagleDraftModelTest, ConfigAndVocabularyMap) {
  ASSERT_TRUE(draft_);
  const nlohmann::json config = test::read_json(kHeads / GetParam() / "config.json");
  const int64_t vocab = config["vocab_size"].get<int64_t>();
  if (config_.kind == model::DraftKind::kEagle) {
    EXPECT_EQ(config_.draft_vocab_size, vocab);
    EXPECT_TRUE(draft_->draft_to_target().empty());
    EXPECT_EQ(config_.target_hidden_width(), config_.llama.hidden_size);
    return;
  }
  EXPECT_EQ(config_.draft_vocab_size, config["draft_vocab_size"].get<int64_t>());
  EXPECT_EQ(config_.aux_hidden_state_layer_ids,
            config["eagle_config"]["eagle_aux_hidden_state_layer_ids"].get<std::vector<int64_t>>());
  EXPECT_EQ(config_.target_hidden_width(), 3 * config_.llama.hidden_size);
  // d2t maps onto distinct target ids, increasing as the script drew them.
  const std::span<const int32_t> map = draft_->draft_to_target();
  ASSERT_EQ(static_cast<int64_t>(map.size()), config_.draft_vocab_size);
  for (size_t i = 1; i < map.size(); ++i) EXPECT_LT(map[i - 1], map[i]);
  EXPECT_GE(map.front(), 0);
  EXPECT_LT(map.back(), vocab);
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& ch : name) ch = ch == '-' ? '_' : ch;
  return name;
}

INSTANTIATE_TEST_SUITE_P(Heads, EagleDraftModelTest,
                         ::testing::Values("tiny-llama-eagle", "tiny-llama-eagle3",
                                           "tiny-llama-tied-eagle", "tiny-llama-tied-eagle3",
                                           "tiny-qwen2-eagle3", "tiny-qwen3-eagle",
                                           "tiny-qwen3-eagle3"),
                         test_name);

// Configs that are not EAGLE heads, or heads the loader cannot run, are refused by name.
TEST(EagleDraftConfigTest, RefusesWhatIsNotAnEagleHead) {
  auto target = model::load_eagle_draft_config(test::model_dir("tiny-llama"));
  ASSERT_FALSE(target.ok());
  EXPECT_NE(target.status().message().find("is not an EAGLE draft head"), std::string::npos)
      << target.status().to_string();
  EXPECT_EQ(model::default_eagle3_aux_layers(32), (std::vector<int64_t>{1, 15, 28}));
}

// The target's side of EAGLE: with capture, the final norm's output of every token (kFull) or
// of the logits rows (kLast), and EAGLE-3's captured layers side by side, against the numpy
// forward of make_eagle_heads.py (itself within 4e-6 of transformers' golden logits).
class TargetCaptureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TargetCaptureTest, HiddenStatesAndCapturedLayersMatchTheReference) {
  const nlohmann::json ref = test::read_json(kHeads / (GetParam() + "-target.json"));
  const auto ids = ref["input_ids"].get<std::vector<int32_t>>();
  const auto layer_outputs =
      ref["layer_outputs"].get<std::vector<std::vector<std::vector<float>>>>();
  const auto final_norm = ref["final_norm_output"].get<std::vector<std::vector<float>>>();
  const auto n = static_cast<int32_t>(ids.size());
  runner::ModelRunnerOptions options = target_options();
  options.aux_hidden_state_layers = {0, 0, 0};  // a 2-layer target has one layer to capture
  auto r = runner::ModelRunner::create(test::model_dir(GetParam()), options);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  runner::ModelRunner& target = **r;
  const int64_t h = target.config().hidden_size;
  cache::ReqToTokenPool req_to_token(2, 64);
  cache::TokenToKvPoolAllocator kv(kSlots);
  runner::ForwardBatchBuilder builder(target.allocator(), kMaxTokens, 2, req_to_token.table());
  const int32_t row = *req_to_token.alloc();
  const std::vector<int32_t> slots = *kv.alloc(n);
  req_to_token.write(row, 0, slots);
  const runner::BatchRequest request{row, 0, ids, slots};

  std::vector<std::vector<float>> captured;  // each token's three copies of layer 0's output
  for (const auto& token : layer_outputs[0]) {
    std::vector<float> three;
    for (int k = 0; k < 3; ++k) three.insert(three.end(), token.begin(), token.end());
    captured.push_back(three);
  }
  ForwardBatch fb = builder.build(ForwardMode::kExtend, LogitsMode::kLastPerRequest,
                                  std::span(&request, 1), target.stream());
  EXPECT_FALSE(target.forward(fb).aux_hidden_states.defined());  // no capture asked
  fb.capture_hidden_mode = CaptureHiddenMode::kFull;
  model::ModelOutput out = target.forward(fb);
  ASSERT_EQ(out.logits.size(0), 1);
  expect_rows(out.hidden_states, final_norm, 0, n, "final norm output", target.stream());
  ASSERT_EQ(out.aux_hidden_states.size(1), 3 * h);
  expect_rows(out.aux_hidden_states, captured, 0, n, "captured layers", target.stream());

  fb.capture_hidden_mode = CaptureHiddenMode::kLast;  // the last token's only
  out = target.forward(fb);
  expect_rows(out.hidden_states, final_norm, static_cast<size_t>(n - 1), 1, "last final norm",
              target.stream());
  expect_rows(out.aux_hidden_states, captured, static_cast<size_t>(n - 1), 1, "last captured",
              target.stream());

  // Layer 1 is the last: its output is the final norm's input, not a layer's input to capture.
  options.aux_hidden_state_layers = {0, 1, 0};
  auto refused = runner::ModelRunner::create(test::model_dir(GetParam()), options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("capture layers must be in [0, num_layers - 2]"),
            std::string::npos)
      << refused.status().to_string();
}

INSTANTIATE_TEST_SUITE_P(Targets, TargetCaptureTest,
                         ::testing::Values("tiny-llama", "tiny-llama-tied"), test_name);

}  // namespace
}  // namespace sgl
