// LoRA: adapter_config.json's checks and scaling, the CPU update against a plain loop (into a
// column range of a wider output), and LoraBatch's rows by request.
#include "kernels/lora.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/allocator.h"
#include "model/layers/lora_batch.h"
#include "model/lora_adapter.h"

namespace sgl::model {
namespace {

Result<LoraConfig> parse(const std::string& text) { return parse_lora_config(text, "cfg.json"); }

TEST(LoraConfig, ReadsRankAlphaScalingAndTargets) {
  auto c = parse(R"({"peft_type": "LORA", "r": 8, "lora_alpha": 16,
                     "target_modules": ["q_proj", "down_proj"], "bias": "none"})");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->r, 8);
  EXPECT_FLOAT_EQ(c->scaling(), 2.0f);
  EXPECT_TRUE(c->targets[static_cast<int>(LoraModule::kQ)]);
  EXPECT_TRUE(c->targets[static_cast<int>(LoraModule::kDown)]);
  EXPECT_FALSE(c->targets[static_cast<int>(LoraModule::kV)]);
  auto rs =
      parse(R"({"r": 4, "lora_alpha": 8, "use_rslora": true, "target_modules": "all-linear"})");
  ASSERT_TRUE(rs.ok()) << rs.status().to_string();
  EXPECT_FLOAT_EQ(rs->scaling(), 4.0f);  // alpha / sqrt(r)
  for (bool t : rs->targets) EXPECT_TRUE(t);
  auto defaults = parse(R"({"r": 16, "target_modules": ["v_proj"]})");  // PEFT's alpha: 8
  ASSERT_TRUE(defaults.ok());
  EXPECT_FLOAT_EQ(defaults->scaling(), 0.5f);
}

TEST(LoraConfig, RefusesWhatWouldChangeTheMathByName) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"target_modules": ["q_proj"]})", "r must be"},
      {R"({"r": 0, "target_modules": ["q_proj"]})", "r must be"},
      {R"({"r": 4})", "target_modules is missing"},
      {R"({"r": 4, "target_modules": []})", "target_modules is empty"},
      {R"({"r": 4, "target_modules": ".*_proj"})", "regular expression"},
      {R"({"r": 4, "target_modules": ["embed_tokens"]})", "\"embed_tokens\" is not supported"},
      {R"({"r": 4, "target_modules": ["q_proj"], "bias": "all"})", "bias"},
      {R"({"r": 4, "target_modules": ["q_proj"], "use_dora": true})", "use_dora"},
      {R"({"r": 4, "target_modules": ["q_proj"], "fan_in_fan_out": true})", "fan_in_fan_out"},
      {R"({"r": 4, "target_modules": ["q_proj"], "modules_to_save": ["lm_head"]})",
       "modules_to_save"},
      {R"({"r": 4, "target_modules": ["q_proj"], "rank_pattern": {"q_proj": 8}})", "rank_pattern"},
      {R"({"r": 4, "target_modules": ["q_proj"], "layers_to_transform": [0]})",
       "layers_to_transform"},
      {R"({"r": 4, "target_modules": ["q_proj"], "peft_type": "IA3"})", "is not LORA"},
      {R"([1, 2])", "not a JSON object"},
      {R"({"r": 4,)", "not JSON"},
  };
  for (const auto& [text, words] : cases) {
    auto c = parse(text);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_NE(c.status().message().find(words), std::string::npos)
        << text << ": " << c.status().message();
  }
  // Fields that leave the math alone (an empty pattern, no DoRA) are fine.
  EXPECT_TRUE(parse(R"({"r": 4, "target_modules": ["q_proj"], "use_dora": false,
                        "rank_pattern": {}, "modules_to_save": null, "lora_dropout": 0.1})")
                  .ok());
}

std::vector<float> random_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(AddLora, EqualsAPlainLoopIntoAColumnRange) {
  for (const int64_t rows : {1, 3, 17}) {
    const int64_t k = 24, r = 5, n = 10, width = 32, column = 7;
    std::vector<float> x = random_values(rows * k, 1), a = random_values(r * k, 2),
                       b = random_values(n * r, 3), y = random_values(rows * width, 4);
    std::vector<float> shrunk(static_cast<size_t>(rows * r));
    const std::vector<float> before = y;
    const float scaling = 0.75f;
    const Tensor y_all(y.data(), DType::kF32, {rows, width});
    kernels::add_lora(Tensor(x.data(), DType::kF32, {rows, k}),
                      Tensor(a.data(), DType::kF32, {r, k}), Tensor(b.data(), DType::kF32, {n, r}),
                      scaling, Tensor(shrunk.data(), DType::kF32, {rows, r}),
                      y_all.slice_last(column, n), backend::Stream{});
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < width; ++j) {
        double want = before[i * width + j];
        if (j >= column && j < column + n) {
          for (int64_t q = 0; q < r; ++q) {
            double t = 0;
            for (int64_t c = 0; c < k; ++c) t += double(x[i * k + c]) * a[q * k + c];
            want += scaling * t * b[(j - column) * r + q];
          }
        }
        EXPECT_NEAR(y[i * width + j], want, 1e-4) << rows << " rows, (" << i << ", " << j << ")";
      }
    }
  }
}

TEST(LoraBatch, UpdatesOnlyTheRowsOfEachAdaptersRequests) {
  CpuAllocator allocator;
  const int64_t k = 4, r = 2, n = 3;
  // Two adapters of the one module: A all ones; B all `value`. The update of a row is
  // scaling * value * r * sum(x row).
  std::vector<LoraAdapter> adapters(2);
  for (int i = 0; i < 2; ++i) {
    LoraAdapter& ad = adapters[i];
    ad.config.r = r;
    ad.config.lora_alpha = static_cast<double>(r);  // scaling 1
    ad.layers.resize(1);
    LoraWeights& w = ad.layers[0][static_cast<int>(LoraModule::kO)];
    w.a = Buffer(allocator, DType::kF32, {r, k});
    w.b = Buffer(allocator, DType::kF32, {n, r});
    std::fill_n(w.a.data<float>(), r * k, 1.f);
    std::fill_n(w.b.data<float>(), n * r, static_cast<float>(i + 1));
  }
  // Requests of 2, 1, 3 and 1 rows using adapters 1, 0 (none), 2 and 2.
  const std::vector<int32_t> qo = {0, 2, 3, 6, 7}, ids = {1, 0, 2, 2};
  ForwardBatch fb;
  fb.batch_size = 4;
  fb.num_tokens = 7;
  fb.qo_indptr_host = qo;
  fb.lora_ids_host = ids;
  Buffer shrunk(allocator, DType::kF32, {7, r});
  const LoraBatch batch(adapters, fb, shrunk.tensor());
  ASSERT_FALSE(batch.empty());
  std::vector<float> x(7 * k, 1.f), y(7 * n, 0.f);
  batch.apply(0, LoraModule::kO, Tensor(x.data(), DType::kF32, {7, k}),
              Tensor(y.data(), DType::kF32, {7, n}), backend::Stream{});
  const float per_adapter[] = {0, 1, 2};
  const int32_t adapter_of_row[] = {1, 1, 0, 2, 2, 2, 2};
  for (int row = 0; row < 7; ++row) {
    for (int j = 0; j < n; ++j) {
      EXPECT_FLOAT_EQ(y[row * n + j], per_adapter[adapter_of_row[row]] * r * k) << row;
    }
  }
  // A module no adapter targets is left alone.
  std::fill(y.begin(), y.end(), 0.f);
  batch.apply(0, LoraModule::kQ, Tensor(x.data(), DType::kF32, {7, k}),
              Tensor(y.data(), DType::kF32, {7, n}), backend::Stream{});
  for (float v : y) EXPECT_EQ(v, 0.f);
  // No adapter asked for: nothing to do.
  ForwardBatch plain = fb;
  plain.lora_ids_host = {};
  EXPECT_TRUE(LoraBatch(adapters, plain, shrunk.tensor()).empty());
}

}  // namespace
}  // namespace sgl::model
