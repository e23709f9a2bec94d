// Tensor parallelism on the CPU (f32): every golden model (dense and MoE) split over 2 and 4
// ranks of the shared-memory communicator generates what one rank generates: the same greedy
// ids (and seeded samples), logprobs within tp_f32_logprob_bound (the all-reduces add the ranks'
// partial sums in another order than one rank's GEMM), on every rank. Expert parallelism likewise:
// the MoE models at ep 2 and 4 (whole experts per rank, tokens exchanged all-to-all) and at tp 4 x
// ep 2 (each expert's rows split over the 2 ranks of its group).
#include "model/tensor_parallel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "engine/batch_generator.h"
#include "kernels/rms_norm.h"
#include "model/expert_parallel.h"
#include "parallel_golden_requests.h"
#include "runner/model_runner.h"
#include "test_data.h"
#include "top_logprobs_check.h"
#include "tp_ranks.h"

namespace sgl {
namespace {

runner::ModelRunnerOptions tp_options(
    int tp_size, int ep_size = 1, model::ExpertDispatch dispatch = model::ExpertDispatch::kAuto) {
  runner::ModelRunnerOptions options;
  options.dtype = "float32";
  options.max_num_tokens = 256;
  options.max_batch_size = 8;
  options.num_kv_slots = 1024;
  options.tp_size = tp_size;
  options.ep_size = ep_size;
  options.ep_dispatch = dispatch;
  return options;
}

using test::generate_all;
using test::parallel_requests_of;

// Largest logprob difference; ids must be equal.
double compare(const std::vector<engine::GenerateResult>& ours,
               const std::vector<engine::GenerateResult>& ref, double tol,
               const std::string& where) {
  double worst = 0;
  EXPECT_EQ(ours.size(), ref.size()) << where;
  for (size_t i = 0; i < std::min(ours.size(), ref.size()); ++i) {
    EXPECT_EQ(ours[i].output_ids, ref[i].output_ids) << where << " request " << i;
    if (ours[i].output_ids != ref[i].output_ids) continue;
    for (size_t s = 0; s < ref[i].output_logprobs.size(); ++s) {
      worst = std::max(worst, static_cast<double>(std::abs(ours[i].output_logprobs[s] -
                                                           ref[i].output_logprobs[s])));
      if (s < ref[i].top_logprobs.size() && !ref[i].top_logprobs[s].empty()) {
        nlohmann::json ids, logprobs;
        for (const auto& e : ref[i].top_logprobs[s]) {
          ids.push_back(e.id);
          logprobs.push_back(e.logprob);
        }
        worst =
            std::max(worst, test::expect_top_logprobs(ours[i].top_logprobs[s], ids, logprobs, tol,
                                                      where + " request " + std::to_string(i) +
                                                          " step " + std::to_string(s)));
      }
    }
  }
  EXPECT_LT(worst, tol) << where;
  return worst;
}

struct TpCase {
  std::string model;
  int tp_size;
  int ep_size = 1;
  // At ep > 1: the token exchange (the CPU's default), or the GPUs' default (every rank's
  // experts over the whole batch, masked, then the all-reduce).
  model::ExpertDispatch dispatch = model::ExpertDispatch::kAuto;
};

void PrintTo(const TpCase& c, std::ostream* os) {
  *os << c.model << " tp " << c.tp_size << " ep " << c.ep_size
      << (c.dispatch == model::ExpertDispatch::kAllReduce ? " all-reduce" : "");
}

class TensorParallelGolden : public ::testing::TestWithParam<TpCase> {};

TEST_P(TensorParallelGolden, EveryRankGeneratesWhatOneRankDoes) {
  const TpCase& p = GetParam();
  const std::vector<engine::GenerateRequest> requests = parallel_requests_of(p.model);
  auto single = runner::ModelRunner::create(test::model_dir(p.model), tp_options(1));
  ASSERT_TRUE(single.ok()) << single.status().to_string();
  const std::vector<engine::GenerateResult> ref = generate_all(**single, requests);
  ASSERT_EQ(ref.size(), requests.size());

  std::vector<std::vector<engine::GenerateResult>> ranks(static_cast<size_t>(p.tp_size));
  test::run_ranks(p.tp_size, [&](int rank, distributed::Communicator& comm) {
    auto runner = runner::ModelRunner::create(test::model_dir(p.model),
                                              tp_options(p.tp_size, p.ep_size, p.dispatch), &comm);
    // Every rank loads the same way: all fail or none does (no rank left in a collective).
    ASSERT_TRUE(runner.ok()) << runner.status().to_string();
    ranks[static_cast<size_t>(rank)] = generate_all(**runner, requests);
  });
  double worst = 0;
  for (int r = 0; r < p.tp_size; ++r) {
    worst = std::max(
        worst, compare(ranks[static_cast<size_t>(r)], ref, test::tp_f32_logprob_bound(p.model),
                       p.model + " rank " + std::to_string(r)));
  }
  std::cout << p.model << " tp " << p.tp_size << " ep " << p.ep_size << ": logprobs within "
            << worst << " of tp 1\n";
}

std::vector<TpCase> all_cases() {
  std::vector<TpCase> cases;
  for (const char* model : {"tiny-llama", "tiny-llama-tied", "tiny-qwen2", "tiny-qwen3",
                            "stories260K", "tiny-mixtral", "tiny-qwen2-moe", "tiny-qwen3-moe"}) {
    for (int tp : {2, 4}) cases.push_back({model, tp});
  }
  // Expert parallelism (8 experts each): whole experts per rank, then tp x ep.
  for (const char* model : {"tiny-mixtral", "tiny-qwen2-moe", "tiny-qwen3-moe"}) {
    for (int ep : {2, 4}) cases.push_back({model, ep, ep});
  }
  cases.push_back({"tiny-qwen2-moe", 4, 2});  // with the shared expert
  cases.push_back({"tiny-mixtral", 4, 2});
  // The GPUs' dispatch, on the CPU: whole experts per rank, and tp x ep with a shared expert.
  for (const char* model : {"tiny-mixtral", "tiny-qwen2-moe", "tiny-qwen3-moe"}) {
    cases.push_back({model, 2, 2, model::ExpertDispatch::kAllReduce});
  }
  cases.push_back({"tiny-qwen3-moe", 4, 4, model::ExpertDispatch::kAllReduce});
  cases.push_back({"tiny-qwen2-moe", 4, 2, model::ExpertDispatch::kAllReduce});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Models, TensorParallelGolden, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<TpCase>& info) {
                           std::string name =
                               info.param.model + "_tp" + std::to_string(info.param.tp_size);
                           if (info.param.ep_size > 1) {
                             name += "_ep" + std::to_string(info.param.ep_size);
                           }
                           if (info.param.dispatch == model::ExpertDispatch::kAllReduce) {
                             name += "_all_reduce";
                           }
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

// A communicator around another that counts its all-reduces and all-gathers (the
// vocab-parallel LM head's, one a forward pass) and, with `fold`, takes the all-reduce +
// residual add + RMSNorm the model offers, making the two calls itself (as a fused kernel must
// match them).
class CountingCommunicator final : public distributed::Communicator {
 public:
  CountingCommunicator(distributed::Communicator& inner, bool fold) : inner_(inner), fold_(fold) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void all_reduce(const Tensor& buffer, distributed::ReduceOp op, backend::Stream stream) override {
    ++all_reduces;
    inner_.all_reduce(buffer, op, stream);
  }
  bool all_reduce_add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& weight,
                               float eps, backend::Stream stream) override {
    if (!fold_) return false;
    ++folds;
    inner_.all_reduce(x, distributed::ReduceOp::kSum, stream);
    kernels::fused_add_rms_norm(x, residual, weight, eps, stream);
    return true;
  }
  void all_gather(const Tensor& in, const Tensor& out, backend::Stream stream) override {
    ++all_gathers;
    inner_.all_gather(in, out, stream);
  }
  void all_to_all(const Tensor& in, const Tensor& out, backend::Stream stream) override {
    inner_.all_to_all(in, out, stream);
  }
  void broadcast(const Tensor& buffer, int root, backend::Stream stream) override {
    inner_.broadcast(buffer, root, stream);
  }
  void barrier() override { inner_.barrier(); }

  int64_t all_reduces = 0, all_gathers = 0, folds = 0;

 private:
  distributed::Communicator& inner_;
  bool fold_;
};

// Every block's all-reduce at tp 2 reaches the norm after it (reduce_add_rms_norm), which a
// communicator may fold: two a layer (attention, MLP) in a forward pass of the 2-layer models,
// sparse blocks (with tiny-qwen2-moe's shared expert too) and dense alike. Folded or not, the
// same bits.
TEST(TensorParallelTest, BlocksHandTheirAllReducesToTheNorms) {
  constexpr int64_t kFoldsPerPass = 4;  // 2 layers x (attention, MLP)
  for (const std::string model : {"tiny-llama", "tiny-qwen3-moe", "tiny-qwen2-moe"}) {
    const std::vector<engine::GenerateRequest> requests = parallel_requests_of(model);
    std::vector<engine::GenerateResult> results[2];
    int64_t all_reduces[2] = {}, passes[2] = {}, folds[2] = {};
    for (int fold = 0; fold < 2; ++fold) {
      test::run_ranks(2, [&](int rank, distributed::Communicator& comm) {
        CountingCommunicator counting(comm, fold == 1);
        auto runner = runner::ModelRunner::create(test::model_dir(model), tp_options(2), &counting);
        ASSERT_TRUE(runner.ok()) << runner.status().to_string();
        std::vector<engine::GenerateResult> out = generate_all(**runner, requests);
        if (rank == 0) {
          results[fold] = std::move(out);
          all_reduces[fold] = counting.all_reduces;
          passes[fold] = counting.all_gathers;
          folds[fold] = counting.folds;
        }
      });
    }
    ASSERT_EQ(results[0].size(), requests.size()) << model;
    ASSERT_EQ(results[1].size(), requests.size()) << model;
    for (size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(results[1][i].output_ids, results[0][i].output_ids) << model << " request " << i;
      EXPECT_EQ(results[1][i].output_logprobs, results[0][i].output_logprobs)
          << model << " request " << i;
    }
    EXPECT_GT(passes[1], 0) << model;
    EXPECT_EQ(passes[0], passes[1]) << model;
    EXPECT_EQ(folds[0], 0) << model;
    EXPECT_EQ(folds[1], kFoldsPerPass * passes[1]) << model;
    EXPECT_EQ(all_reduces[0], all_reduces[1] + folds[1]) << model;
  }
}

// A --tp-size the model cannot be split by is refused before anything loads, naming the reason.
TEST(TensorParallelTest, BadSizesAreClearErrors) {
  const auto config = model::load_model_config(test::model_dir("tiny-llama"));  // 4 heads, 2 KV
  ASSERT_TRUE(config.ok());
  EXPECT_TRUE(model::check_tensor_parallel(*config, 1).ok());
  EXPECT_TRUE(model::check_tensor_parallel(*config, 4).ok());  // KV heads replicated
  const Status zero = model::check_tensor_parallel(*config, 0);
  EXPECT_NE(zero.message().find(">= 1"), std::string::npos) << zero.to_string();
  const Status three = model::check_tensor_parallel(*config, 3);
  EXPECT_NE(three.message().find("num_attention_heads"), std::string::npos) << three.to_string();
  const Status eight = model::check_tensor_parallel(*config, 8);
  EXPECT_FALSE(eight.ok());

  model::ModelConfig odd_vocab = *config;
  odd_vocab.vocab_size = 1001;
  const Status vocab = model::check_tensor_parallel(odd_vocab, 2);
  EXPECT_NE(vocab.message().find("vocab_size"), std::string::npos) << vocab.to_string();
  model::ModelConfig odd_mlp = *config;
  odd_mlp.intermediate_size = 250;
  const Status mlp = model::check_tensor_parallel(odd_mlp, 4);
  EXPECT_NE(mlp.message().find("intermediate_size"), std::string::npos) << mlp.to_string();

  // Through the runner: the same error, at create, with no communicator needed to say so.
  distributed::SharedMemoryGroup group(3);
  auto comm = group.communicator(0);
  auto runner =
      runner::ModelRunner::create(test::model_dir("tiny-llama"), tp_options(3), comm.get());
  ASSERT_FALSE(runner.ok());
  EXPECT_NE(runner.status().message().find("num_attention_heads"), std::string::npos)
      << runner.status().to_string();
}

// A --ep-size the model or the --tp-size cannot take is refused before anything loads, naming
// the reason; through the runner too.
TEST(TensorParallelTest, BadExpertParallelSizesAreClearErrors) {
  const auto moe = model::load_model_config(test::model_dir("tiny-mixtral"));  // 8 experts
  ASSERT_TRUE(moe.ok());
  EXPECT_TRUE(model::check_tensor_parallel(*moe, 4, 2).ok());
  EXPECT_TRUE(model::check_tensor_parallel(*moe, 4, 4).ok());
  const Status zero = model::check_tensor_parallel(*moe, 2, 0);
  EXPECT_NE(zero.message().find("--ep-size must be >= 1"), std::string::npos) << zero.to_string();
  const Status tp = model::check_tensor_parallel(*moe, 2, 4);
  EXPECT_NE(tp.message().find("--ep-size 4 does not divide --tp-size 2"), std::string::npos)
      << tp.to_string();
  model::ModelConfig six = *moe;
  six.num_experts = 6;
  const Status experts = model::check_tensor_parallel(six, 4, 4);
  EXPECT_NE(experts.message().find("--ep-size 4 does not divide the model's num_experts (6)"),
            std::string::npos)
      << experts.to_string();
  model::ModelConfig narrow = *moe;
  narrow.moe_intermediate_size = 254;  // 2 does not divide 127 x 2 / 4
  EXPECT_FALSE(model::check_tensor_parallel(narrow, 4, 1).ok());
  EXPECT_TRUE(model::check_tensor_parallel(narrow, 4, 2).ok());  // 2 ranks share an expert
  const auto dense = model::load_model_config(test::model_dir("tiny-llama"));
  ASSERT_TRUE(dense.ok());
  const Status not_moe = model::check_tensor_parallel(*dense, 2, 2);
  EXPECT_NE(not_moe.message().find("needs a mixture-of-experts model"), std::string::npos)
      << not_moe.to_string();

  // Through the runner: the error at create, before any collective.
  distributed::SharedMemoryGroup group(2);
  auto comm = group.communicator(0);
  auto runner =
      runner::ModelRunner::create(test::model_dir("tiny-mixtral"), tp_options(2, 4), comm.get());
  ASSERT_FALSE(runner.ok());
  EXPECT_NE(runner.status().message().find("--ep-size 4 does not divide --tp-size 2"),
            std::string::npos)
      << runner.status().to_string();
  auto single = runner::ModelRunner::create(test::model_dir("tiny-mixtral"), tp_options(1, 2));
  ASSERT_FALSE(single.ok());
  EXPECT_NE(single.status().message().find("--ep-size 2 does not divide --tp-size 1"),
            std::string::npos)
      << single.status().to_string();
}

// The expert-parallel split: consecutive ranks share a group; groups hold contiguous experts.
TEST(TensorParallelTest, ExpertParallelLayout) {
  const model::ExpertParallel r5 = model::expert_parallel({5, 8}, 2);  // groups of 4 ranks
  EXPECT_EQ(r5.ep_rank, 1);
  EXPECT_EQ(r5.moe_tp, (model::TensorParallel{1, 4}));
  const model::ShardRange experts = model::local_experts(8, r5);
  EXPECT_EQ(experts.start, 4);
  EXPECT_EQ(experts.size, 4);
  const model::ExpertParallel whole = model::expert_parallel({3, 4}, 4);
  EXPECT_EQ(whole.ep_rank, 3);
  EXPECT_EQ(whole.moe_tp, (model::TensorParallel{0, 1}));
  EXPECT_EQ(model::local_experts(8, whole).start, 6);
  const model::ExpertParallel tp_only = model::expert_parallel({3, 4}, 1);
  EXPECT_EQ(tp_only.ep_rank, 0);
  EXPECT_EQ(tp_only.moe_tp, (model::TensorParallel{3, 4}));
  EXPECT_EQ(model::local_experts(8, tp_only).size, 8);
}

// The shard arithmetic: heads split, KV heads replicated below tp, errors otherwise.
TEST(TensorParallelTest, ShardOf) {
  using Range = std::vector<int64_t>;  // {start, size}
  const auto range = [](int64_t total, int64_t units, int rank, int size) {
    auto r = model::shard_of(total, units, {rank, size}, "x");
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? Range{r->start, r->size} : Range{};
  };
  EXPECT_EQ(range(128, 4, 1, 2), (Range{64, 64}));     // 2 of 4 heads
  EXPECT_EQ(range(64, 2, 3, 4), (Range{32, 32}));      // KV head 1 of 2
  EXPECT_EQ(range(64, 2, 1, 4), (Range{0, 32}));       // KV head 0, shared
  EXPECT_EQ(range(172, 172, 3, 4), (Range{129, 43}));  // plain rows
  EXPECT_FALSE(model::shard_of(96, 3, {0, 2}, "x").ok());
  EXPECT_FALSE(model::shard_of(96, 4, {0, 3}, "x").ok());
  EXPECT_EQ(model::kv_heads_per_rank(2, 4), 1);
  EXPECT_EQ(model::kv_heads_per_rank(8, 4), 2);
}

}  // namespace
}  // namespace sgl
