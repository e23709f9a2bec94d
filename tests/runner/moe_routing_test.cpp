// The routed experts a MoE model records (ModelOptions::enable_return_routed_experts), and, in
// bf16 on CUDA, the MoE goldens held to a bound at the positions routed as in f32.
//
// Why the bf16 check has this shape: a random tiny MoE model has near-tied experts, and bf16
// activations flip the router's choice at some of them; a flipped position runs other experts'
// math, so its logprobs move by up to 2.0 in transformers' own bf16 run
// (data/transformers_bf16_error.json) and by a different amount in ours, since which positions
// flip depends on rounding. A bound loose enough for every flip would accept a wrong kernel. So
// the test records both runs' routing, takes our f32 run on the same GPU (held to the golden at
// 1e-3 by golden_parity_cuda_f32_test) as the routing reference, and holds every position that
// was routed like it in every layer to the bound a dense model of this size gets (tiny-qwen3's,
// the loosest of the random dense models: 1.5 x transformers' bf16 error). A flip also reaches
// later positions through attention, diluted (0.14 on tiny-qwen3-moe on an H200, against 0.03
// before any flip): those are held to this model's own bound (1.5 x transformers' bf16 error,
// flips included) and reported apart. Flipped positions are counted; more than a quarter of them
// fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>
#include <vector>

#include "cache/req_to_token_pool.h"
#include "cache/token_to_kv_pool_allocator.h"
#include "kernels/copy.h"
#include "runner/forward_batch_builder.h"
#include "runner/model_runner.h"
#include "sampling/sampler.h"
#include "test_data.h"
#include "top_logprobs_check.h"

namespace sgl {
namespace {

#ifdef SGL_TEST_ON_CUDA
const Device kDevice = Device::cuda(0);
#else
const Device kDevice = Device::cpu();
#endif

std::unique_ptr<runner::ModelRunner> make_runner(const std::string& model,
                                                 const std::string& dtype) {
  runner::ModelRunnerOptions options;
  options.device = kDevice;
  options.dtype = dtype;
  options.max_num_tokens = 512;
  options.max_batch_size = 16;
  options.num_kv_slots = 4096;
  options.disable_cuda_graph = true;
  options.enable_return_routed_experts = true;
  auto r = runner::ModelRunner::create(test::model_dir(model), options);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

// One forward's results on the host.
struct Forward {
  std::vector<float> logits;   // [rows, vocab]
  std::vector<int32_t> route;  // [sparse_layers, tokens, top_k]
  int64_t sparse_layers = 0, tokens = 0, top_k = 0, vocab = 0;

  // Layer `layer`'s experts for token `t`, as a set.
  std::vector<int32_t> experts(int64_t layer, int64_t t) const {
    const auto* row = route.data() + (layer * tokens + t) * top_k;
    std::vector<int32_t> set(row, row + top_k);
    std::ranges::sort(set);
    return set;
  }
};

// Runs one forward over `requests` (each a token sequence from position 0, or `decode_last`:
// the sequences' prefixes as an extend first, then their last tokens as a decode batch, whose
// results are returned).
class Harness {
 public:
  explicit Harness(runner::ModelRunner& runner)
      : runner_(runner),
        req_to_token_(16, static_cast<int32_t>(runner.context_length())),
        kv_(static_cast<int32_t>(runner.num_kv_slots())),
        builder_(runner.allocator(), 512, 16, req_to_token_.table()) {}

  Forward run(const std::vector<std::vector<int32_t>>& sequences, bool decode_last = false) {
    std::vector<runner::BatchRequest> extend, decode;
    std::vector<std::vector<int32_t>> slots;
    std::vector<int32_t> rows;
    for (const auto& ids : sequences) {
      rows.push_back(*req_to_token_.alloc());
      slots.push_back(*kv_.alloc(static_cast<int32_t>(ids.size())));
      req_to_token_.write(rows.back(), 0, slots.back());
    }
    for (size_t i = 0; i < sequences.size(); ++i) {
      const size_t n = sequences[i].size() - (decode_last ? 1 : 0);
      extend.push_back(
          {rows[i], 0, std::span(sequences[i]).first(n), std::span(slots[i]).first(n)});
      if (decode_last) {
        decode.push_back({rows[i], static_cast<int32_t>(n), std::span(sequences[i]).last(1),
                          std::span(slots[i]).last(1)});
      }
    }
    int64_t extend_tokens = 0;
    for (const auto& r : extend) extend_tokens += static_cast<int64_t>(r.input_ids.size());
    Forward f = to_host(runner_.forward(builder_.build(ForwardMode::kExtend, LogitsMode::kAllTokens,
                                                       extend, runner_.stream())),
                        extend_tokens);
    if (decode_last) {
      f = to_host(runner_.forward(builder_.build(ForwardMode::kDecode, LogitsMode::kLastPerRequest,
                                                 decode, runner_.stream())),
                  static_cast<int64_t>(decode.size()));
    }
    for (size_t i = 0; i < sequences.size(); ++i) {
      kv_.free(slots[i]);
      req_to_token_.free(rows[i]);
    }
    return f;
  }

 private:
  Forward to_host(const model::ModelOutput& out, int64_t tokens) {
    Forward f;
    EXPECT_TRUE(out.routed_experts.defined());
    if (!out.routed_experts.defined()) return f;
    f.vocab = out.logits.size(1);
    f.top_k = out.routed_experts.size(1);
    f.tokens = tokens;
    f.sparse_layers = out.routed_experts.size(0) / tokens;
    EXPECT_EQ(f.tokens * f.sparse_layers, out.routed_experts.size(0));
    EXPECT_GT(f.sparse_layers, 0);
    f.logits.resize(static_cast<size_t>(out.logits.numel()));
    f.route.resize(static_cast<size_t>(out.routed_experts.numel()));
    kernels::copy(out.logits, Tensor(f.logits.data(), DType::kF32, {out.logits.size(0), f.vocab}),
                  runner_.stream());
    kernels::copy(out.routed_experts,
                  Tensor(f.route.data(), DType::kI32, {out.routed_experts.size(0), f.top_k}),
                  runner_.stream());
    return f;
  }

  runner::ModelRunner& runner_;
  cache::ReqToTokenPool req_to_token_;
  cache::TokenToKvPoolAllocator kv_;
  runner::ForwardBatchBuilder builder_;
};

// A golden case's scored tokens: the prompt, then greedy tokens up to the prefill's length.
std::vector<int32_t> case_tokens(const nlohmann::json& c) {
  std::vector<int32_t> ids = c["prompt_ids"].get<std::vector<int32_t>>();
  const auto greedy = c["greedy_ids"].get<std::vector<int32_t>>();
  for (size_t i = 0; ids.size() < c["prefill"]["topk_ids"].size(); ++i) ids.push_back(greedy[i]);
  return ids;
}

class RoutedExperts : public ::testing::TestWithParam<std::string> {};

#if !defined(SGL_TEST_ON_CUDA) || defined(SGL_TEST_DTYPE_F32)
// In f32 the routing of a sequence does not depend on how it is batched: prefill alone, prefill
// beside another sequence and a decode step of its last token record the same experts; each
// row names top_k distinct experts in range, and the rows differ (a constant would pass the
// rest).
TEST_P(RoutedExperts, RecordedAlikeAloneBatchedAndInDecode) {
  const nlohmann::json golden = test::golden(GetParam());
  auto runner = make_runner(GetParam(), "float32");
  ASSERT_TRUE(runner);
  Harness harness(*runner);
  const int64_t num_experts = runner->config().num_experts;
  // Cases 1 and 2: a prompt of several tokens each (case 0 has one).
  const std::vector<int32_t> a = case_tokens(golden["cases"][1]),
                             b = case_tokens(golden["cases"][2]);
  const Forward alone = harness.run({a});
  const Forward batched = harness.run({b, a});
  const Forward decode = harness.run({a}, /*decode_last=*/true);
  const auto n = static_cast<int64_t>(a.size());
  ASSERT_EQ(alone.tokens, n);
  ASSERT_EQ(batched.tokens, n + static_cast<int64_t>(b.size()));
  ASSERT_EQ(decode.tokens, 1);
  std::set<std::vector<int32_t>> distinct_rows;
  for (int64_t layer = 0; layer < alone.sparse_layers; ++layer) {
    for (int64_t t = 0; t < n; ++t) {
      const std::vector<int32_t> experts = alone.experts(layer, t);
      distinct_rows.insert(experts);
      EXPECT_EQ(std::ranges::adjacent_find(experts), experts.end()) << "repeated expert";
      EXPECT_GE(experts.front(), 0);
      EXPECT_LT(experts.back(), num_experts);
      EXPECT_EQ(experts, batched.experts(layer, static_cast<int64_t>(b.size()) + t))
          << "layer " << layer << " token " << t;
    }
    EXPECT_EQ(decode.experts(layer, 0), alone.experts(layer, n - 1)) << "layer " << layer;
  }
  EXPECT_GT(distinct_rows.size(), 2u);
}
#endif

#if defined(SGL_TEST_ON_CUDA) && !defined(SGL_TEST_DTYPE_F32)
// The bounds positions routed as in f32 are held to (the file comment says why): a dense model's
// (tiny-qwen3's, the loosest of the random dense models), and after an earlier flip in the same
// sequence this model's own (1.5 x transformers' bf16 error, which includes its flips).
struct Bounds {
  double logprob = 0, logprob_after_flip = 0, logit = 0;
};
Bounds bounds_for(const std::string& model) {
  const nlohmann::json measured = test::read_json(sgl::test::test_data_dir("runner") /
                                                  "transformers_bf16_error.json")["models"];
  const nlohmann::json& dense = measured["tiny-qwen3"];
  Bounds b;
  b.logprob = std::max(2e-2, 1.5 * dense["prefill_top10_logprob"].get<double>());
  b.logprob_after_flip =
      std::max(b.logprob, 1.5 * measured[model]["prefill_top10_logprob"].get<double>());
  b.logit = std::max(0.15, 1.5 * dense["last_logits"].get<double>());
  return b;
}

TEST_P(RoutedExperts, Bf16PositionsRoutedAsInF32MatchTheGolden) {
  const nlohmann::json golden = test::golden(GetParam());
  const Bounds bound = bounds_for(GetParam());
  auto bf16 = make_runner(GetParam(), "bfloat16");
  auto f32 = make_runner(GetParam(), "float32");
  ASSERT_TRUE(bf16 && f32);
  Harness ours(*bf16), reference(*f32);
  int64_t positions = 0, flipped = 0;
  double worst_logprob = 0, worst_after_flip = 0, worst_logit = 0;  // reported
  for (size_t ci = 0; ci < golden["cases"].size(); ++ci) {
    const nlohmann::json& c = golden["cases"][ci];
    const std::vector<int32_t> ids = case_tokens(c);
    const Forward b = ours.run({ids}), f = reference.run({ids});
    bool after_flip = false;  // an earlier position of this case was routed unlike f32
    bool same = true;         // this position routed as in f32 in every layer
    for (size_t p = 0; p < ids.size(); ++p) {
      ++positions;
      same = true;
      for (int64_t layer = 0; layer < b.sparse_layers; ++layer) {
        same = same && b.experts(layer, static_cast<int64_t>(p)) ==
                           f.experts(layer, static_cast<int64_t>(p));
      }
      if (!same) {
        ++flipped;
        after_flip = true;
        continue;
      }
      const auto top = sampling::top_logprobs_of(b.logits.data() + p * b.vocab, b.vocab, 10);
      const double err = test::expect_top_logprobs(
          top, c["prefill"]["topk_ids"][p], c["prefill"]["topk_logprobs"][p],
          after_flip ? bound.logprob_after_flip : bound.logprob,
          "case " + std::to_string(ci) + " position " + std::to_string(p));
      double& worst = after_flip ? worst_after_flip : worst_logprob;
      worst = std::max(worst, err);
    }
    if (same) {  // the last position
      const auto& last = c["prefill"]["last_logits"];
      const float* row = b.logits.data() + (ids.size() - 1) * b.vocab;
      double err = 0;
      for (int64_t v = 0; v < b.vocab; ++v) {
        err = std::max(err, std::abs(row[v] - last[v].get<double>()));
      }
      EXPECT_LT(err, bound.logit) << "case " << ci;
      worst_logit = std::max(worst_logit, err);
    }
  }
  std::cout << GetParam() << ": " << flipped << " of " << positions
            << " positions routed unlike f32; the others' teacher-forced top-10 logprobs within "
            << worst_logprob << " (bound " << bound.logprob << "; after an earlier flip "
            << worst_after_flip << ", bound " << bound.logprob_after_flip
            << "), last logits within " << worst_logit << " (bound " << bound.logit << ")\n";
  EXPECT_LE(4 * flipped, positions) << "bf16 routing flipped at more than a quarter of positions";
}
#endif

INSTANTIATE_TEST_SUITE_P(Models, RoutedExperts,
                         ::testing::Values("tiny-mixtral", "tiny-qwen2-moe", "tiny-qwen3-moe"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::erase(name, '-');
                           return name;
                         });

}  // namespace
}  // namespace sgl
