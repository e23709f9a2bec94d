// CUDA graphs of speculative verify passes (CudaGraphRunner with T tokens a request): a replayed
// verify graph gives the eager verify pass's logits, hidden states and EAGLE-3 aux hidden states,
// for chain (causal) and tree masks, at batch sizes that fill a bucket and ones padded to the
// next, over several context lengths, replayed again and again with new inputs. Two runners with
// the same (dummy or golden) weights: one with verify graphs of two lengths, one eager; each
// prefills the same requests into the same KV slots first.
// Bound: padding changes the GEMMs' M (cuBLAS may pick other kernels, so other summation
// orders), so the outputs need not be bitwise equal: |graph - eager| <= 1e-4 x max|eager| in f32
// and 2e-2 x max|eager| in bf16 (a few bf16 ulps of the largest value).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "backend/backend.h"
#include "cache/req_to_token_table.h"
#include "kernels/copy.h"
#include "runner/forward_batch_builder.h"
#include "runner/model_runner.h"
#include "speculative/draft_tree.h"
#include "test_data.h"

namespace sgl::runner {
namespace {

constexpr int32_t kContext = 512;
constexpr int32_t kMaxRequests = 8;

// A Llama with head_dim 64 (the flash kernels' shapes; the golden tiny models' heads take the
// reference attention), written as a bare config.json for dummy weights.
std::filesystem::path flash_model_dir() {
  const auto dir = std::filesystem::temp_directory_path() / "sgl_verify_graph_model";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"],
    "hidden_act": "silu", "hidden_size": 256, "intermediate_size": 512,
    "max_position_embeddings": 2048, "model_type": "llama", "num_attention_heads": 4,
    "num_hidden_layers": 3, "num_key_value_heads": 2, "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0, "tie_word_embeddings": false, "vocab_size": 1000})";
  return dir;
}

struct Case {
  const char* name;
  bool flash;  // the dummy head_dim-64 model in bf16, else tiny-llama in f32 (reference)
  int32_t tokens;
  bool tree;
};

// One runner and what it needs to build batches over its own KV slots.
struct Side {
  std::unique_ptr<ModelRunner> runner;
  std::unique_ptr<ForwardBatchBuilder> builder;
};

// f32 copy of a device tensor (f32 or bf16) [rows, cols]; the copy waits for `stream`.
std::vector<float> to_host(const Tensor& t, backend::Stream stream) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::kF32) {
    kernels::copy(t, Tensor(out.data(), DType::kF32, t.shape()), stream);
    return out;
  }
  EXPECT_EQ(t.dtype(), DType::kBF16);
  std::vector<uint16_t> bits(out.size());
  kernels::copy(t, Tensor(bits.data(), DType::kBF16, t.shape()), stream);
  for (size_t i = 0; i < bits.size(); ++i) {
    const uint32_t word = static_cast<uint32_t>(bits[i]) << 16;
    std::memcpy(&out[i], &word, sizeof word);
  }
  return out;
}

void expect_close(const Tensor& graph, const Tensor& eager, double rel, backend::Stream stream,
                  const std::string& what) {
  ASSERT_TRUE(graph.defined() && eager.defined()) << what;
  ASSERT_TRUE(std::ranges::equal(graph.shape(), eager.shape())) << what;
  const std::vector<float> g = to_host(graph, stream), e = to_host(eager, stream);
  double scale = 0, worst = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    ASSERT_TRUE(std::isfinite(g[i]) && std::isfinite(e[i])) << what << " element " << i;
    scale = std::max(scale, std::abs(static_cast<double>(e[i])));
    worst = std::max(worst, std::abs(static_cast<double>(g[i]) - e[i]));
  }
  EXPECT_LE(worst, rel * scale) << what << ": max |graph - eager| " << worst << ", max |eager| "
                                << scale;
}

class VerifyGraph : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const Case s = GetParam();
    for (bool graphs : {true, false}) {
      ModelRunnerOptions o;
      o.device = Device::cuda(0);
      o.load_format = s.flash ? "dummy" : "auto";
      o.dtype = s.flash ? "bfloat16" : "float32";
      o.seed = 11;
      o.context_length = kContext;
      o.num_kv_slots = 1 + kMaxRequests * kContext;  // slot 0: the graphs' dummy slot
      o.max_batch_size = 2 * kMaxRequests;
      o.max_num_tokens = 2048;
      o.cuda_graph_max_bs = kMaxRequests;
      o.disable_cuda_graph = !graphs;
      // Two verify lengths: a step with every draft and one with a draft fewer.
      o.cuda_graph_verify_tokens = {s.tokens, s.tokens - 1};
      o.cuda_graph_verify_tree = s.tree;
      // EAGLE-3 targets also return the captured layers' streams.
      o.aux_hidden_state_layers = s.flash ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0};
      auto runner =
          ModelRunner::create(s.flash ? flash_model_dir() : test::model_dir("tiny-llama"), o);
      ASSERT_TRUE(runner.ok()) << runner.status().to_string();
      Side side;
      side.runner = std::move(*runner);
      side.builder = std::make_unique<ForwardBatchBuilder>(
          side.runner->allocator(), o.max_num_tokens, o.max_batch_size, table_);
      sides_.push_back(std::move(side));
    }
    vocab_ = static_cast<int32_t>(sides_[0].runner->config().vocab_size);
    for (int32_t r = 0; r < kMaxRequests; ++r) {
      std::vector<int32_t> slots(kContext);
      for (int32_t i = 0; i < kContext; ++i) slots[i] = 1 + r * kContext + i;
      table_.write(r, 0, slots);
    }
  }

  // Prefills `bs` requests with prefix lengths from `contexts` on both runners, then runs one
  // verify pass of T tokens each (`fewer`: T - 1, the other captured length) on both and
  // compares. `short_one`: request 0 verifies one token fewer than the others (a cut draft),
  // so the batch must run eagerly.
  void check(int32_t bs, std::span<const int32_t> contexts, bool short_one = false,
             bool fewer = false) {
    const Case s = GetParam();
    const int32_t tokens = fewer ? s.tokens - 1 : s.tokens;
    std::mt19937 rng(bs * 1000 + contexts[0]);
    std::uniform_int_distribution<int32_t> token(0, vocab_ - 1);
    // Prefill (eager on both: one logits row per request).
    std::vector<std::vector<int32_t>> prompts(bs), slots(bs);
    std::vector<BatchRequest> prefill(bs);
    for (int32_t b = 0; b < bs; ++b) {
      const int32_t n = contexts[b % contexts.size()];
      for (int32_t i = 0; i < n; ++i) prompts[b].push_back(token(rng));
      const auto row = table_.row(b);
      slots[b].assign(row.begin(), row.end());
      prefill[b] = {b, 0, prompts[b], std::span(slots[b]).first(n)};
    }
    for (Side& side : sides_) {
      const ForwardBatch fb = side.builder->build(ForwardMode::kExtend, LogitsMode::kLastPerRequest,
                                                  prefill, side.runner->stream());
      side.runner->forward(fb);
    }
    // The verify: each request's last token and its drafts, at chain or tree positions.
    std::vector<std::vector<int32_t>> ids(bs), positions(bs);
    std::vector<std::vector<uint64_t>> masks(bs);
    std::vector<BatchRequest> verify(bs);
    for (int32_t b = 0; b < bs; ++b) {
      const auto prefix = static_cast<int32_t>(prompts[b].size());
      const int32_t n = short_one && b == 0 ? tokens - 1 : tokens;
      for (int32_t i = 0; i < n; ++i) ids[b].push_back(token(rng));
      verify[b] = {b, prefix, ids[b], std::span(slots[b]).subspan(prefix, n)};
      if (s.tree) {
        // A binary tree: node i + 1's parent is node i / 2 (0: the root).
        std::vector<int32_t> parents, depth(1, 0);
        for (int32_t i = 0; i + 1 < n; ++i) {
          parents.push_back(i / 2);
          depth.push_back(depth[i / 2] + 1);
        }
        masks[b] = speculative::tree_mask(parents);
        for (int32_t d : depth) positions[b].push_back(prefix + d);
        verify[b].positions = positions[b];
        verify[b].tree_mask = masks[b];
      }
    }
    model::ModelOutput out[2];
    for (int i = 0; i < 2; ++i) {
      Side& side = sides_[i];
      ForwardBatch fb = side.builder->build(ForwardMode::kExtend, LogitsMode::kAllTokens, verify,
                                            side.runner->stream());
      fb.capture_hidden_mode = CaptureHiddenMode::kFull;
      // Runner 0 replays its verify graphs (unless a draft was cut); runner 1 has none.
      EXPECT_EQ(side.runner->replays_graph(fb), i == 0 && !short_one) << "batch " << bs;
      out[i] = side.runner->forward(fb);
      backend::synchronize(side.runner->stream());
    }
    const double rel = s.flash ? 2e-2 : 1e-4;
    const std::string what = std::string(s.name) + " batch " + std::to_string(bs) + " context " +
                             std::to_string(contexts[0]);
    ASSERT_EQ(out[0].logits.size(0), bs * tokens - (short_one ? 1 : 0));
    const backend::Stream stream = sides_[0].runner->stream();  // both synchronized above
    expect_close(out[0].logits, out[1].logits, rel, stream, what + " logits");
    expect_close(out[0].hidden_states, out[1].hidden_states, rel, stream, what + " hidden states");
    expect_close(out[0].aux_hidden_states, out[1].aux_hidden_states, rel, stream,
                 what + " aux states");
  }

  cache::ReqToTokenTable table_{kMaxRequests, kContext};
  std::vector<Side> sides_;
  int32_t vocab_ = 0;
};

TEST_P(VerifyGraph, ReplayEqualsEagerPass) {
  // 1, 2, 8 fill their buckets; 3 and 5 are padded to 4 and 8. Contexts from a few tokens to
  // several KV tiles, mixed within a batch.
  const std::vector<std::vector<int32_t>> contexts = {{5}, {37, 130}, {300, 7, 64, 129}};
  for (int32_t bs : {1, 2, 3, 5, 8}) {
    for (const auto& c : contexts) check(bs, c);
  }
  // The other captured length, through its own graphs.
  for (int32_t bs : {1, 3, 8}) check(bs, contexts[2], false, /*fewer=*/true);
}

TEST_P(VerifyGraph, CutDraftsRunEagerly) {
  const std::vector<int32_t> contexts = {20, 90};
  check(3, contexts, /*short_one=*/true);
  check(3, contexts);  // and the graphs still replay after an eager verify
}

INSTANTIATE_TEST_SUITE_P(Shapes, VerifyGraph,
                         ::testing::Values(Case{"flash_chain4", true, 4, false},
                                           Case{"flash_tree8", true, 8, true},
                                           Case{"reference_chain3", false, 3, false},
                                           Case{"reference_tree6", false, 6, true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sgl::runner
