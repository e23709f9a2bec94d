// The model's building blocks on the CPU: ActivationPlan sizes and allocates what blocks declare;
// load_linear stacks fused modules and their biases (and only checks in check-only mode);
// DenseMlp's forward equals a plain SwiGLU on the checkpoint's weights, and MoeMlp's a plain
// router + top-k experts (+ gated shared expert) loop on them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "model/layers/activation_plan.h"
#include "model/layers/decoder_layer.h"
#include "model/layers/dense_mlp.h"
#include "model/layers/linear.h"
#include "model/layers/moe_mlp.h"
#include "model/model_config.h"
#include "model/weight_source.h"
#include "model_test_util.h"

namespace sgl::model {
namespace {

using test_util::testdata_models_dir;

std::unique_ptr<SafetensorsWeightSource> open_source(const std::string& model) {
  auto source = SafetensorsWeightSource::open(testdata_models_dir() / model);
  EXPECT_TRUE(source.ok()) << source.status().to_string();
  return source.ok() ? std::move(source).value() : nullptr;
}

std::vector<float> read(const WeightSource& source, const std::string& name,
                        const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  EXPECT_TRUE(source.read_f32(name, shape, out.data()).ok()) << name;
  return out;
}

std::vector<float> values(const Buffer& b) {
  const float* p = b.data<float>();
  return std::vector<float>(p, p + b.tensor().numel());
}

TEST(ActivationPlanTest, SumsAndAllocatesInDeclarationOrder) {
  Buffer a, b;
  ActivationPlan plan;
  plan.add(&a, DType::kBF16, 3, 5);
  plan.add(&b, DType::kF32, 2, 7);
  EXPECT_EQ(plan.bytes(), 3 * 5 * 2 + 2 * 7 * 4);
  EXPECT_EQ(a.nbytes(), 0u);
  plan.allocate(cpu_allocator());
  EXPECT_EQ(a.tensor().dtype(), DType::kBF16);
  EXPECT_EQ(a.tensor().size(0), 3);
  EXPECT_EQ(a.tensor().size(1), 5);
  EXPECT_EQ(b.tensor().dtype(), DType::kF32);
  EXPECT_EQ(b.nbytes(), 2u * 7 * 4);
}

// --enable-fp32-all-reduce's f32 partial sums [N, H] are planned only where they change
// something: several ranks in a 16-bit dtype.
TEST(DecoderLayerTest, PlansPartialSumsForTheFp32AllReduceOnlyAtSeveralRanksIn16Bits) {
  const auto bytes = [](bool fp32_all_reduce, DType dtype, TensorParallel tp) {
    const AttentionShape shape{.hidden_size = 64,
                               .num_heads = 4 / tp.size,
                               .num_kv_heads = 2 / tp.size,
                               .total_num_heads = 4,
                               .total_num_kv_heads = 2,
                               .head_dim = 16,
                               .tp = tp};
    LayerScratch scratch;
    ActivationPlan plan;
    DecoderLayer::plan_scratch({}, shape, 10, dtype, Device::cpu(), fp32_all_reduce, scratch, plan);
    return plan.bytes();
  };
  const TensorParallel two{.rank = 1, .size = 2};
  EXPECT_EQ(bytes(true, DType::kBF16, two) - bytes(false, DType::kBF16, two), 10 * 64 * 4);
  EXPECT_EQ(bytes(true, DType::kF32, two), bytes(false, DType::kF32, two));
  EXPECT_EQ(bytes(true, DType::kBF16, {}), bytes(false, DType::kBF16, {}));
}

TEST(LinearTest, FusedModulesAndBiasesStackAlongTheOutput) {
  auto source = open_source("tiny-qwen2");  // q: 128 rows, k / v: 64 each, biased
  ASSERT_TRUE(source);
  const std::string p = "model.layers.1.self_attn.";
  const LinearSpec spec{.modules = {p + "q_proj", p + "k_proj", p + "v_proj"},
                        .out_features = {128, 64, 64},
                        .in_features = 128,
                        .bias = true};
  WeightLoader loader(source.get(), cpu_allocator(), DType::kF32, backend::Stream{});

  loader.set_check_only(true);
  Linear checked;
  const Status check = load_linear(loader, spec, checked);
  loader.set_check_only(false);
  ASSERT_TRUE(check.ok()) << check.to_string();
  EXPECT_EQ(checked.weight.nbytes(), 0u);  // nothing allocated
  EXPECT_EQ(loader.checked_bytes(), (256 * 128 + 256) * 4);

  Linear linear;
  ASSERT_TRUE(load_linear(loader, spec, linear).ok());
  // A missing bias is named; the weight queued before it stays in `o` until finish().
  const LinearSpec o_spec{
      .modules = {p + "o_proj"}, .out_features = {128}, .in_features = 128, .bias = true};
  Linear o;
  test_util::expect_status(load_linear(loader, o_spec, o), StatusCode::kNotFound,
                           {p + "o_proj.bias"});
  EXPECT_EQ(o.weight.nbytes(), 128u * 128 * 4);
  ASSERT_TRUE(loader.finish().ok());

  std::vector<float> weight, bias;
  for (const char* m : {"q_proj", "k_proj", "v_proj"}) {
    const int64_t rows = m[0] == 'q' ? 128 : 64;
    const auto w = read(*source, p + m + ".weight", {rows, 128});
    const auto b = read(*source, p + m + ".bias", {rows});
    weight.insert(weight.end(), w.begin(), w.end());
    bias.insert(bias.end(), b.begin(), b.end());
  }
  EXPECT_EQ(values(linear.weight), weight);
  EXPECT_EQ(values(linear.bias), bias);
  EXPECT_EQ(values(o.weight), read(*source, p + "o_proj.weight", {128, 128}));
}

TEST(DenseMlpTest, ForwardIsSwiGlu) {
  auto source = open_source("tiny-llama");  // hidden 128, intermediate 256
  ASSERT_TRUE(source);
  constexpr int64_t kHidden = 128, kInter = 256, kTokens = 3;
  const std::string p = "model.layers.0.mlp.";
  WeightLoader loader(source.get(), cpu_allocator(), DType::kF32, backend::Stream{});
  DenseMlp mlp(kHidden, kInter);
  ASSERT_TRUE(mlp.load(loader, p).ok());
  ASSERT_TRUE(loader.finish().ok());
  DenseMlp::Scratch scratch;
  ActivationPlan plan;
  DenseMlp::plan_scratch(kInter, kTokens, DType::kF32, scratch, plan);
  plan.allocate(cpu_allocator());

  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  Buffer hidden(cpu_allocator(), DType::kF32, {kTokens, kHidden});
  for (int64_t i = 0; i < kTokens * kHidden; ++i) hidden.data<float>()[i] = dist(rng);
  const std::vector<float> x = values(hidden);
  mlp.forward(hidden, scratch, backend::Stream{});

  const auto gate = read(*source, p + "gate_proj.weight", {kInter, kHidden});
  const auto up = read(*source, p + "up_proj.weight", {kInter, kHidden});
  const auto down = read(*source, p + "down_proj.weight", {kHidden, kInter});
  for (int64_t t = 0; t < kTokens; ++t) {
    std::vector<double> act(kInter);
    for (int64_t i = 0; i < kInter; ++i) {
      double g = 0, u = 0;
      for (int64_t k = 0; k < kHidden; ++k) {
        g += double{x[t * kHidden + k]} * gate[i * kHidden + k];
        u += double{x[t * kHidden + k]} * up[i * kHidden + k];
      }
      act[i] = g / (1 + std::exp(-g)) * u;
    }
    for (int64_t h = 0; h < kHidden; ++h) {
      double y = 0;
      for (int64_t i = 0; i < kInter; ++i) y += act[i] * down[h * kInter + i];
      EXPECT_NEAR(hidden.data<float>()[t * kHidden + h], y, 1e-4) << "token " << t << " " << h;
    }
  }
}

// SwiGLU of one row x[H] through gate / up [I, H] and down [H, I], in double.
std::vector<double> swiglu(const float* x, const std::vector<float>& gate,
                           const std::vector<float>& up, const std::vector<float>& down,
                           int64_t hidden, int64_t inter) {
  std::vector<double> act(inter), y(hidden, 0.0);
  for (int64_t i = 0; i < inter; ++i) {
    double g = 0, u = 0;
    for (int64_t k = 0; k < hidden; ++k) {
      g += double{x[k]} * gate[i * hidden + k];
      u += double{x[k]} * up[i * hidden + k];
    }
    act[i] = g / (1 + std::exp(-g)) * u;
  }
  for (int64_t h = 0; h < hidden; ++h) {
    for (int64_t i = 0; i < inter; ++i) y[h] += act[i] * down[h * inter + i];
  }
  return y;
}

// MoeMlp on a test checkpoint equals transformers' sparse block written out: softmax over the
// router logits, the top-k experts (renormalized as the config says), each a SwiGLU of the
// per-expert tensors the checkpoint names, plus the shared expert scaled by its sigmoid gate.
// `shape_of` builds the block from the config as the architecture does (mixtral.cpp,
// qwen2_moe.cpp).
void expect_moe_matches_loop(const std::string& model,
                             MoeShape (*shape_of)(const ModelConfig& config)) {
  SCOPED_TRACE(model);
  auto source = open_source(model);
  ASSERT_TRUE(source);
  Result<ModelConfig> config = load_model_config(testdata_models_dir() / model);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  const MoeShape shape = shape_of(*config);
  const int64_t kH = shape.hidden_size, kI = shape.intermediate_size, kE = shape.num_experts;
  constexpr int64_t kTokens = 5;
  const std::string p = "model.layers.1." + shape.names.block;
  WeightLoader loader(source.get(), cpu_allocator(), DType::kF32, backend::Stream{});
  MoeMlp mlp(shape);
  ASSERT_TRUE(mlp.load(loader, "model.layers.1.").ok());
  ASSERT_TRUE(loader.finish().ok());
  MoeMlp::Scratch scratch;
  ActivationPlan plan;
  MoeMlp::plan_scratch(shape, kTokens, DType::kF32, Device::cpu(), scratch, plan);
  plan.allocate(cpu_allocator());

  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  Buffer hidden(cpu_allocator(), DType::kF32, {kTokens, kH});
  for (int64_t i = 0; i < kTokens * kH; ++i) hidden.data<float>()[i] = dist(rng);
  const std::vector<float> x = values(hidden);
  mlp.forward(hidden, scratch, backend::Stream{});

  const auto router = read(*source, p + "gate.weight", {kE, kH});
  for (int64_t t = 0; t < kTokens; ++t) {
    const float* xt = x.data() + t * kH;
    std::vector<double> prob(kE);
    double total = 0;
    for (int64_t e = 0; e < kE; ++e) {
      double logit = 0;
      for (int64_t k = 0; k < kH; ++k) logit += double{xt[k]} * router[e * kH + k];
      total += prob[e] = std::exp(logit);
    }
    std::vector<int64_t> order(kE);
    for (int64_t e = 0; e < kE; ++e) order[e] = e;
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return prob[a] > prob[b]; });
    double top_sum = 0;
    for (int64_t j = 0; j < shape.top_k; ++j) top_sum += prob[order[j]];
    std::vector<double> y(kH, 0.0);
    for (int64_t j = 0; j < shape.top_k; ++j) {
      const int64_t e = order[j];
      const std::string ex = p + "experts." + std::to_string(e) + ".";
      const double w = prob[e] / (shape.renormalize ? top_sum : total);
      const auto out =
          swiglu(xt, read(*source, ex + shape.names.gate_proj + ".weight", {kI, kH}),
                 read(*source, ex + shape.names.up_proj + ".weight", {kI, kH}),
                 read(*source, ex + shape.names.down_proj + ".weight", {kH, kI}), kH, kI);
      for (int64_t h = 0; h < kH; ++h) y[h] += w * out[h];
    }
    if (shape.shared_intermediate_size > 0) {
      const int64_t kS = shape.shared_intermediate_size;
      const auto out =
          swiglu(xt, read(*source, p + "shared_expert.gate_proj.weight", {kS, kH}),
                 read(*source, p + "shared_expert.up_proj.weight", {kS, kH}),
                 read(*source, p + "shared_expert.down_proj.weight", {kH, kS}), kH, kS);
      const auto gate = read(*source, p + "shared_expert_gate.weight", {1, kH});
      double g = 0;
      for (int64_t k = 0; k < kH; ++k) g += double{xt[k]} * gate[k];
      for (int64_t h = 0; h < kH; ++h) y[h] += out[h] / (1 + std::exp(-g));
    }
    for (int64_t h = 0; h < kH; ++h) {
      EXPECT_NEAR(hidden.data<float>()[t * kH + h], y[h], 1e-5) << "token " << t << " " << h;
    }
  }
}

TEST(MoeMlpTest, MixtralForwardIsTheRenormalizedTopKExperts) {
  expect_moe_matches_loop("tiny-mixtral", [](const ModelConfig& c) {
    MoeShape shape = moe_shape(
        c, {.block = "block_sparse_moe.", .gate_proj = "w1", .up_proj = "w3", .down_proj = "w2"});
    shape.renormalize = true;
    return shape;
  });
}

TEST(MoeMlpTest, Qwen2MoeForwardAddsTheGatedSharedExpert) {
  expect_moe_matches_loop("tiny-qwen2-moe", [](const ModelConfig& c) {
    MoeShape shape = moe_shape(c);
    shape.shared_intermediate_size = c.shared_expert_intermediate_size;
    return shape;
  });
}

}  // namespace
}  // namespace sgl::model
