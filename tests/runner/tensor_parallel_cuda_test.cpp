// Tensor parallelism on CUDA over NCCL. On one GPU: a runner given a NCCL communicator of one
// rank runs every collective of the model (the row-parallel all-reduces, the vocab-parallel
// embedding's all-reduce, the LM head's gather, the MoE combine's all-reduce; eagerly and inside
// the decode graphs) and generates exactly what the plain runner does, for every golden model in
// f32 and bf16; --tp-size above the GPU count is a clear error. On several GPUs (skipped, saying
// so, where fewer exist): every golden model at tp 2 and 4, and the MoE ones at ep 2 and 4
// (whole experts per rank; the pairs of other ranks' experts masked, one all-reduce), rank r on
// cuda:r, generates what tp 1 does on the same GPU, on every rank: in f32 the same greedy ids and
// logprobs within kF32Tol; in bf16 (dense models: bf16 moves the MoE routers, see
// golden_parity_test) the same ids up to a near-tie of the reference and logprobs within the bf16
// bound golden_parity_cuda_test uses, with bf16 partial sums (the default: the custom
// all-reduce adds them in f32 and rounds once, NCCL where it does not apply adds in bf16) or f32
// ones (--enable-fp32-all-reduce). The groups come from nccl_group, custom all-reduce on.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "distributed/nccl_communicator.h"
#include "engine/batch_generator.h"
#include "engine/model_engine.h"
#include "engine/stream_outcome.h"
#include "parallel_golden_requests.h"
#include "runner/model_runner.h"
#include "test_data.h"
#include "top_logprobs_check.h"

namespace sgl {
namespace {

// f32 GEMMs split over ranks add in another order: the CPU measured up to 1.1e-5 (bound 3e-5).
constexpr double kF32Tol = 1e-4;

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

runner::ModelRunnerOptions options_for(int tp, int device, bool bf16) {
  runner::ModelRunnerOptions o;
  o.device = Device::cuda(device);
  o.dtype = bf16 ? "bfloat16" : "float32";
  o.max_num_tokens = 256;
  o.max_batch_size = 8;
  o.num_kv_slots = 1024;
  o.tp_size = tp;
  return o;
}

using test::generate_all;
using test::parallel_requests_of;

// bf16's bound for `model`: golden_parity_test's max(2e-2, 1.5 x transformers' own bf16 error).
double bf16_bound(const std::string& model) {
  const nlohmann::json measured = test::read_json(sgl::test::test_data_dir("runner") /
                                                  "transformers_bf16_error.json")["models"][model];
  return std::max(2e-2, 1.5 * measured["step_top5_logprob"].get<double>());
}

// The bound with --enable-fp32-all-reduce: 1.6x the largest of what two H200s measured at tp 2
// and four at tp 4 (stories260K 0.0249 / 0.0216, tiny-llama 0.0076 / 0.0076, tiny-llama-tied
// 0.0016 / 0.0016, tiny-qwen2 0.0068 / 0.0057, tiny-qwen3 0.0013 / 0.0050), at least 0.005. The
// bf16 all-reduce measured 0.070 / 0.047, 0.022 / 0.020, 0.023 / 0.028, 0.018 / 0.026 and 0.023
// / 0.022 there with NCCL's bf16 sums (at tp 2 the custom all-reduce's are the same to the digit):
// a flag that changed nothing fails.
double fp32_all_reduce_bound(const std::string& model) {
  static const std::map<std::string, double> measured = {
      {"stories260K", 0.0249}, {"tiny-llama", 0.0076}, {"tiny-llama-tied", 0.0016},
      {"tiny-qwen2", 0.0068},  {"tiny-qwen3", 0.0050},
  };
  return std::max(5e-3, 1.6 * measured.at(model));
}

// Largest logprob difference of `ours` from `ref` (the results of `requests`). Ids must be
// equal; with a `tie` > 0 a greedy request may diverge at a step where the reference's top-2
// logprobs are within `tie`, and a sampled one anywhere: its seeded draw picks from the whole
// distribution, which bf16 moves (first seen on two H200s: the random tiny models' flat
// distributions moved request 4's draw at steps 0-2, all four models; f32 stays equal). The
// rest of a diverged request is skipped.
double compare(const std::vector<engine::GenerateResult>& ours,
               const std::vector<engine::GenerateResult>& ref,
               const std::vector<engine::GenerateRequest>& requests, double tol, double tie,
               const std::string& where) {
  double worst = 0;
  EXPECT_EQ(ours.size(), ref.size()) << where;
  for (size_t i = 0; i < std::min(ours.size(), ref.size()); ++i) {
    const auto& a = ours[i];
    const auto& b = ref[i];
    EXPECT_EQ(a.output_ids.size(), b.output_ids.size()) << where << " request " << i;
    for (size_t s = 0; s < std::min(a.output_ids.size(), b.output_ids.size()); ++s) {
      if (a.output_ids[s] != b.output_ids[s]) {
        const bool sampled = requests[i].sampling.temperature > 0;
        const bool near_tie =
            tie > 0 &&
            (sampled || (b.top_logprobs.size() > s && b.top_logprobs[s].size() >= 2 &&
                         b.top_logprobs[s][0].logprob - b.top_logprobs[s][1].logprob < tie));
        EXPECT_TRUE(near_tie) << where << " request " << i << " diverged at step " << s;
        break;
      }
      worst = std::max(worst,
                       static_cast<double>(std::abs(a.output_logprobs[s] - b.output_logprobs[s])));
    }
  }
  EXPECT_LT(worst, tol) << where;
  return worst;
}

// Generation models of the goldens: dense, then MoE.
const std::vector<std::string> kDense = {"tiny-llama", "tiny-llama-tied", "tiny-qwen2",
                                         "tiny-qwen3", "stories260K"};
const std::vector<std::string> kMoe = {"tiny-mixtral", "tiny-qwen2-moe", "tiny-qwen3-moe"};

struct Case {
  std::string model;
  bool bf16;
};

class OneRankNccl : public ::testing::TestWithParam<Case> {};

// The communicator's path through the model at one rank is the identity: bit-equal outputs.
TEST_P(OneRankNccl, GeneratesExactlyWhatThePlainRunnerDoes) {
  const Case& c = GetParam();
  const auto requests = parallel_requests_of(c.model);
  auto plain = runner::ModelRunner::create(test::model_dir(c.model), options_for(1, 0, c.bf16));
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  const auto ref = generate_all(**plain, requests);
  plain->reset();
  auto group = distributed::nccl_group({0});
  ASSERT_TRUE(group.ok()) << group.status().to_string();
  auto ranked = runner::ModelRunner::create(test::model_dir(c.model), options_for(1, 0, c.bf16),
                                            (*group)[0].get());
  ASSERT_TRUE(ranked.ok()) << ranked.status().to_string();
  const auto ours = generate_all(**ranked, requests);
  ASSERT_EQ(ours.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_EQ(ours[i].output_ids, ref[i].output_ids) << c.model << " request " << i;
    EXPECT_EQ(ours[i].output_logprobs, ref[i].output_logprobs) << c.model << " request " << i;
  }
}

std::vector<Case> one_rank_cases() {
  std::vector<Case> cases;
  for (const auto& m : kDense) cases.push_back({m, true}), cases.push_back({m, false});
  for (const auto& m : kMoe) cases.push_back({m, true}), cases.push_back({m, false});
  return cases;
}

std::string case_name(const std::string& model, bool bf16, int tp) {
  std::string name = model + (bf16 ? "_bf16" : "_f32") + (tp > 1 ? "_tp" + std::to_string(tp) : "");
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Models, OneRankNccl, ::testing::ValuesIn(one_rank_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return case_name(info.param.model, info.param.bf16, 1);
                         });

struct TpCase {
  std::string model;
  bool bf16;
  int tp;
  int ep = 1;  // expert parallelism: the GPUs' dispatch (every rank's experts, one all-reduce)
  bool fp32_all_reduce = false;  // --enable-fp32-all-reduce (bf16 only)
};

class TensorParallelCuda : public ::testing::TestWithParam<TpCase> {};

TEST_P(TensorParallelCuda, EveryRankGeneratesWhatOneGpuDoes) {
  const TpCase& p = GetParam();
  if (device_count() < p.tp) {
    GTEST_SKIP() << "tp " << p.tp << " needs " << p.tp << " GPUs, found " << device_count();
  }
  const auto requests = parallel_requests_of(p.model);
  std::vector<engine::GenerateResult> ref;
  {
    auto single = runner::ModelRunner::create(test::model_dir(p.model), options_for(1, 0, p.bf16));
    ASSERT_TRUE(single.ok()) << single.status().to_string();
    ref = generate_all(**single, requests);
  }
  std::vector<int> devices;
  for (int r = 0; r < p.tp; ++r) devices.push_back(r);
  auto group = distributed::nccl_group(devices);
  ASSERT_TRUE(group.ok()) << group.status().to_string();
  std::vector<std::vector<engine::GenerateResult>> ranks(static_cast<size_t>(p.tp));
  std::vector<std::thread> threads;
  for (int r = 0; r < p.tp; ++r) {
    threads.emplace_back([&, r] {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      runner::ModelRunnerOptions o = options_for(p.tp, r, p.bf16);
      o.ep_size = p.ep;
      o.fp32_all_reduce = p.fp32_all_reduce;
      auto runner = runner::ModelRunner::create(test::model_dir(p.model), o,
                                                (*group)[static_cast<size_t>(r)].get());
      // Every rank loads alike: all fail or none (no rank left waiting in a collective).
      ASSERT_TRUE(runner.ok()) << runner.status().to_string();
      ranks[static_cast<size_t>(r)] = generate_all(**runner, requests);
    });
  }
  for (auto& t : threads) t.join();
  const double tol = !p.bf16             ? kF32Tol
                     : p.fp32_all_reduce ? fp32_all_reduce_bound(p.model)
                                         : bf16_bound(p.model);
  const double tie = p.bf16 ? 2 * bf16_bound(p.model) : 0;  // ids may part at near-ties
  double worst = 0;
  for (int r = 0; r < p.tp; ++r) {
    // Every rank sampled what rank 0 did (equal logits, the same seeds).
    for (size_t i = 0; i < ranks[0].size() && i < ranks[static_cast<size_t>(r)].size(); ++i) {
      EXPECT_EQ(ranks[static_cast<size_t>(r)][i].output_ids, ranks[0][i].output_ids)
          << "rank " << r << " request " << i;
    }
    worst = std::max(worst, compare(ranks[static_cast<size_t>(r)], ref, requests, tol, tie,
                                    p.model + " rank " + std::to_string(r)));
  }
  std::cout << p.model << (p.bf16 ? " bf16" : " f32") << " tp " << p.tp << " ep " << p.ep
            << (p.fp32_all_reduce ? " fp32 all-reduce" : "") << ": logprobs within " << worst
            << " of tp 1\n";
}

std::vector<TpCase> tp_cases() {
  std::vector<TpCase> cases;
  for (int tp : {2, 4}) {
    for (const auto& m : kDense) cases.push_back({m, false, tp}), cases.push_back({m, true, tp});
    // bf16 with the partial sums added in f32, held to fp32_all_reduce_bound.
    for (const auto& m : kDense) cases.push_back({m, true, tp, 1, true});
    for (const auto& m : kMoe) cases.push_back({m, false, tp});
    // Expert parallelism: whole experts per rank.
    for (const auto& m : kMoe) cases.push_back({m, false, tp, tp});
  }
  cases.push_back({"tiny-qwen2-moe", false, 4, 2});  // tp x ep, with the shared expert
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Models, TensorParallelCuda, ::testing::ValuesIn(tp_cases()),
                         [](const ::testing::TestParamInfo<TpCase>& info) {
                           return case_name(info.param.model, info.param.bf16, info.param.tp) +
                                  (info.param.ep > 1 ? "_ep" + std::to_string(info.param.ep) : "") +
                                  (info.param.fp32_all_reduce ? "_fp32_all_reduce" : "");
                         });

// Through the engine (TpWorkerGroup: rank r on cuda:r, the KV slot count agreed, decode graphs
// captured per rank): tp 2 serves tp 1's greedy ids where there are 2 GPUs; with fewer, the
// start-up error says how many it needs and found.
TEST(TensorParallelCudaEngine, ServesWhatOneGpuServesOrSaysItNeedsMoreGpus) {
  runner::ModelRunnerOptions ro;
  ro.device = Device::cuda(0);
  ro.tp_size = 2;
  ro.mem_fraction_static = 0.3;
  engine::EngineOptions eo;
  eo.scheduler.max_running_requests = 8;
  const std::string model = "tiny-llama";
  if (device_count() < 2) {
    auto me = engine::launch_model_engine(test::model_dir(model), ro, eo);
    ASSERT_FALSE(me.ok());
    EXPECT_NE(
        me.status().message().find("--tp-size 2 needs 2 GPUs here (cuda:0 to cuda:1), found " +
                                   std::to_string(device_count())),
        std::string::npos)
        << me.status().to_string();
    return;
  }
  const auto requests = parallel_requests_of(model);
  ro.dtype = "float32";
  std::vector<test::Outcome> outcomes[2];
  for (int tp : {1, 2}) {
    ro.tp_size = tp;
    auto me = engine::launch_model_engine(test::model_dir(model), ro, eo);
    ASSERT_TRUE(me.ok()) << me.status().to_string();
    outcomes[tp - 1] = test::submit_and_collect(*me->engine, requests);
  }
  ASSERT_EQ(outcomes[1].size(), outcomes[0].size());
  for (size_t i = 0; i < outcomes[0].size(); ++i) {
    EXPECT_EQ(outcomes[1][i].ids, outcomes[0][i].ids) << "request " << i;
  }
}

}  // namespace
}  // namespace sgl
