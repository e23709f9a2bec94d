// The engine flags' parallelism checks (issue #24): --tp-size / --ep-size on each device, and
// the multi-node bootstrap flags (--nnodes, --node-rank, --dist-init-addr, SGLang's names):
// read into the setup (sgl-server serves across nodes, the other tools refuse), bad values
// clear.
#include "app/engine_flags.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "app/sglang_flags.h"
#include "backend/devices.h"
#include "distributed/nccl_communicator.h"

namespace sgl::app {
namespace {

Result<EngineSetup> parse(std::vector<std::string> args) {
  auto cli = CliArgs::parse(args, flag_sets({engine_flag_table()}));
  if (!cli.ok()) return cli.status();
  return parse_engine_flags(*cli);
}

std::string error_of(std::vector<std::string> args) {
  auto setup = parse(std::move(args));
  return setup.ok() ? "" : setup.status().message();
}

// --random-seed seeds unseeded sampling only when given; number flags take finite numbers.
TEST(EngineFlagsTest, RandomSeedAndFiniteNumbers) {
  auto unset = parse({});
  ASSERT_TRUE(unset.ok()) << unset.status().to_string();
  EXPECT_FALSE(unset->engine.unseeded_sampling_seed.has_value());
  auto seeded = parse({"--random-seed", "42"});
  ASSERT_TRUE(seeded.ok()) << seeded.status().to_string();
  EXPECT_EQ(seeded->engine.unseeded_sampling_seed, 42u);
  EXPECT_EQ(seeded->engine.scheduler.random_seed, 42u);
  // Unset, the random policy's shuffle differs from run to run (SGLang draws a seed); two draws
  // of 32 random bits are equal once in 2^32.
  auto again = parse({});
  ASSERT_TRUE(again.ok());
  EXPECT_NE(unset->engine.scheduler.random_seed, again->engine.scheduler.random_seed);
  for (const char* bad : {"inf", "nan", "-inf", "1e999"}) {
    EXPECT_NE(error_of({"--mem-fraction-static", bad}).find("finite number"), std::string::npos)
        << bad;
  }
}

// SGLang's size suffixes on the token-count flags, its log level names in any case, and the
// attention backend checked before anything loads.
TEST(EngineFlagsTest, SizeSuffixesLogLevelsAndAttentionBackends) {
  auto sized = parse({"--context-length", "32k", "--max-total-tokens", "1Mi",
                      "--max-prefill-tokens", "25.6k", "--log-level", "WARNING"});
  ASSERT_TRUE(sized.ok()) << sized.status().to_string();
  EXPECT_EQ(sized->runner.context_length, 32000);
  EXPECT_EQ(sized->runner.num_kv_slots, 1 << 20);
  EXPECT_EQ(sized->engine.scheduler.max_prefill_tokens, 25600);
  auto truncated = parse({"--max-prefill-tokens", "1.00059k"});
  ASSERT_TRUE(truncated.ok()) << truncated.status().to_string();
  EXPECT_EQ(truncated->engine.scheduler.max_prefill_tokens, 1000);  // as int(Decimal * 1000)
  for (const char* bad : {"1.5Ki", "32K", "k", "1.k", "3e4", "1kk"}) {
    EXPECT_NE(error_of({"--context-length", bad}), "") << bad;
  }
  EXPECT_NE(error_of({"--context-length", "1.5Ki"}).find("decimals are not allowed"),
            std::string::npos);
  EXPECT_NE(error_of({"--max-total-tokens", "9223372036854775807k"}).find("too large"),
            std::string::npos);
  EXPECT_NE(error_of({"--max-prefill-tokens", "2Gi"}).find("at most 2^30"), std::string::npos);
  EXPECT_NE(error_of({"--chunked-prefill-size", "9223372036854775807"}).find("at most 2^30"),
            std::string::npos);
  EXPECT_NE(error_of({"--random-seed", "-1"}).find("--random-seed must be >= 0"),
            std::string::npos);
  // SGLang's bound on --schedule-conservativeness: >= 0 (0 reserves nothing ahead).
  auto zero = parse({"--schedule-conservativeness", "0"});
  ASSERT_TRUE(zero.ok()) << zero.status().to_string();
  EXPECT_EQ(zero->engine.scheduler.schedule_conservativeness, 0.0);
  EXPECT_NE(error_of({"--schedule-conservativeness", "-0.5"})
                .find("--schedule-conservativeness must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_of({"--max-queued-requests", "-1"}).find("--max-queued-requests must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_of({"--log-level", "loud"}).find("--log-level: a log level is"),
            std::string::npos);
  EXPECT_NE(error_of({"--attention-backend", "flashinfr"}).find("unknown --attention-backend"),
            std::string::npos);
  for (const char* known : {"auto", "cpu", "flashinfer", "fa3"}) {
    EXPECT_EQ(error_of({"--device", "cpu", "--attention-backend", known}), "") << known;
  }
}

// SGLang 0.5's --cuda-graph-backend-decode disabled runs decode steps eagerly, as
// --disable-cuda-graph (its older name) does; full keeps the graphs.
TEST(EngineFlagsTest, CudaGraphBackendDecodeDisabled) {
  const auto with_compat = [](std::vector<std::string> args) -> Result<EngineSetup> {
    auto cli = CliArgs::parse(args, flag_sets({engine_flag_table(), sglang_compat_flag_table()}));
    if (!cli.ok()) return cli.status();
    return parse_engine_flags(*cli);
  };
  auto disabled = with_compat({"--cuda-graph-backend-decode", "disabled"});
  ASSERT_TRUE(disabled.ok()) << disabled.status().to_string();
  EXPECT_TRUE(disabled->runner.disable_cuda_graph);
  auto full = with_compat({"--cuda-graph-backend-decode", "full"});
  ASSERT_TRUE(full.ok()) << full.status().to_string();
  EXPECT_FALSE(full->runner.disable_cuda_graph);
}

bool has_note(const EngineSetup& setup, const std::string& text) {
  return std::any_of(setup.notes.begin(), setup.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

// --device auto (and no --device, as SGLang) takes the GPU where one is visible and says so
// (the CPU, as before, silently); a named device is taken as given, without the note.
TEST(EngineFlagsTest, DeviceAutoPicksTheGpuWhereOneIsVisible) {
  const bool gpu = backend::cuda_device_count() > 0;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{}, std::vector<std::string>{"--device", "auto"}}) {
    auto setup = parse(args);
    ASSERT_TRUE(setup.ok()) << setup.status().to_string();
    EXPECT_EQ(setup->runner.device, gpu ? Device::cuda(0) : Device::cpu());
    EXPECT_EQ(has_note(*setup, "--device auto: "), gpu);  // the GPU's choice is said
  }
  auto cpu = parse({"--device", "cpu"});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  EXPECT_EQ(cpu->runner.device, Device::cpu());
  EXPECT_FALSE(has_note(*cpu, "--device auto"));
  // --base-gpu-id names a GPU, so auto means that one.
  auto second = parse({"--base-gpu-id", "1"});
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_EQ(second->runner.device, Device::cuda(1));
  EXPECT_NE(error_of({"--device", "gpu"}).find("auto, cpu, cuda or cuda:N"), std::string::npos);
  EXPECT_NE(error_of({"--device", "cpu", "--base-gpu-id", "1"}).find("--base-gpu-id needs"),
            std::string::npos);
}

TEST(EngineFlagsTest, OneNodeIsAccepted) {
  EXPECT_TRUE(parse({"--nnodes", "1", "--node-rank", "0"}).ok());
  EXPECT_TRUE(parse({"--nnodes", "1", "--dist-init-addr", "127.0.0.1:50000"}).ok());
  EXPECT_TRUE(parse({"--tp-size", "2", "--device", "cpu"}).ok());
}

TEST(EngineFlagsTest, SeveralNodesAreReadIntoTheSetup) {
  auto setup = parse({"--tp-size", "4", "--nnodes", "2", "--node-rank", "1", "--dist-init-addr",
                      "sgl-dev-0:50000"});
  ASSERT_TRUE(setup.ok()) << setup.status().to_string();
  EXPECT_EQ(setup->nodes.nnodes, 2);
  EXPECT_EQ(setup->nodes.node_rank, 1);
  ASSERT_TRUE(setup->nodes.dist_init_addr.has_value());
  EXPECT_EQ(setup->nodes.dist_init_addr->to_string(), "sgl-dev-0:50000");
  // sgl-server serves across nodes; the other tools say they run on one.
  const Status single = distributed::check_single_node(setup->nodes, "sgl-generate");
  EXPECT_NE(single.message().find("sgl-generate runs on one node"), std::string::npos)
      << single.to_string();
}

TEST(EngineFlagsTest, BadBootstrapValuesAreClearErrors) {
  EXPECT_NE(error_of({"--nnodes", "2", "--node-rank", "2", "--dist-init-addr", "h:1"})
                .find("--node-rank 2 is not in [0, --nnodes 2)"),
            std::string::npos);
  EXPECT_NE(error_of({"--nnodes", "0"}).find("--nnodes must be in [1, 4096]"), std::string::npos);
  EXPECT_NE(error_of({"--node-rank", "1"}).find("--node-rank 1 is not in [0, --nnodes 1)"),
            std::string::npos);
  EXPECT_NE(error_of({"--nnodes", "2", "--node-rank", "1"}).find("needs --dist-init-addr"),
            std::string::npos);
  const std::string addr = error_of({"--dist-init-addr", "no-port"});
  EXPECT_NE(addr.find("--dist-init-addr 'no-port': no port"), std::string::npos) << addr;
  EXPECT_NE(error_of({"--dist-init-addr", "host:99999"}).find("[1, 65535]"), std::string::npos);
}

TEST(EngineFlagsTest, ParallelismOnCuda) {
  // Expert parallelism runs on GPUs too: --ep-size is checked against --tp-size and the model
  // when it loads.
  EXPECT_EQ(error_of({"--device", "cuda", "--tp-size", "2", "--ep-size", "2"}),
            error_of({"--device", "cuda", "--tp-size", "2"}));
  const std::string tp = error_of({"--device", "cuda", "--tp-size", "2"});
  if (distributed::nccl_available()) {
    EXPECT_EQ(tp, "");  // the GPU count is checked when the ranks load
  } else {
    EXPECT_NE(tp.find("--tp-size 2 on cuda needs NCCL"), std::string::npos) << tp;
  }
}

// Whether one of `s`'s start-up notes says `flag` changes nothing here.
bool says_changes_nothing(const std::string& flag, const EngineSetup& s) {
  for (const std::string& note : s.notes) {
    if (note.find(flag + " changes nothing here") != std::string::npos) return true;
  }
  return false;
}

TEST(EngineFlagsTest, Fp32AllReduceIsReadAndSaysWhereItChangesNothing) {
  auto off = parse({"--tp-size", "2"});
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  EXPECT_FALSE(off->runner.fp32_all_reduce);  // SGLang's bf16 all-reduce by default
  auto bf16 = parse({"--tp-size", "2", "--dtype", "bfloat16", "--enable-fp32-all-reduce"});
  ASSERT_TRUE(bf16.ok()) << bf16.status().to_string();
  EXPECT_TRUE(bf16->runner.fp32_all_reduce);
  EXPECT_FALSE(says_changes_nothing("--enable-fp32-all-reduce", *bf16));
  for (const std::vector<std::string>& idle :
       {std::vector<std::string>{"--enable-fp32-all-reduce", "--dtype", "bfloat16"},
        {"--tp-size", "2", "--enable-fp32-all-reduce"},  // the CPU's auto dtype is float32
        {"--tp-size", "2", "--dtype", "float32", "--enable-fp32-all-reduce"}}) {
    auto setup = parse(idle);
    ASSERT_TRUE(setup.ok()) << setup.status().to_string();
    EXPECT_TRUE(says_changes_nothing("--enable-fp32-all-reduce", *setup))
        << idle[0] << " " << idle[1];
  }
}

TEST(EngineFlagsTest, DisableCustomAllReduceIsReadAndSaysWhereItChangesNothing) {
  auto on = parse({"--tp-size", "2", "--device", "cuda"});
  ASSERT_TRUE(on.ok() || !distributed::nccl_available()) << on.status().to_string();
  if (on.ok()) EXPECT_FALSE(on->runner.disable_custom_all_reduce);  // SGLang's default: on
  auto gpus = parse({"--tp-size", "2", "--device", "cuda", "--disable-custom-all-reduce"});
  if (gpus.ok()) {  // (a build without NCCL refuses --tp-size 2 on cuda)
    EXPECT_TRUE(gpus->runner.disable_custom_all_reduce);
    EXPECT_FALSE(says_changes_nothing("--disable-custom-all-reduce", *gpus));
  }
  for (const std::vector<std::string>& idle :
       {std::vector<std::string>{"--disable-custom-all-reduce"},
        {"--tp-size", "2", "--disable-custom-all-reduce"}}) {  // the CPU's ranks
    auto setup = parse(idle);
    ASSERT_TRUE(setup.ok()) << setup.status().to_string();
    EXPECT_TRUE(setup->runner.disable_custom_all_reduce);
    EXPECT_TRUE(says_changes_nothing("--disable-custom-all-reduce", *setup)) << idle[0];
  }
}

TEST(EngineFlagsTest, SpeculativeDraftPolicy) {
  auto adaptive = parse({"--speculative-algorithm", "NGRAM"});
  ASSERT_TRUE(adaptive.ok()) << adaptive.status().to_string();
  EXPECT_TRUE(adaptive->engine.scheduler.speculative.adaptive_drafts);  // the default
  auto fixed = parse({"--speculative-algorithm", "NGRAM", "--speculative-draft-policy", "fixed"});
  ASSERT_TRUE(fixed.ok()) << fixed.status().to_string();
  EXPECT_FALSE(fixed->engine.scheduler.speculative.adaptive_drafts);
  EXPECT_NE(error_of({"--speculative-algorithm", "NGRAM", "--speculative-draft-policy", "x"})
                .find("must be adaptive or fixed, got 'x'"),
            std::string::npos);
  EXPECT_NE(error_of({"--speculative-draft-policy", "fixed"}).find("needs --speculative-algorithm"),
            std::string::npos);
}

}  // namespace
}  // namespace sgl::app
