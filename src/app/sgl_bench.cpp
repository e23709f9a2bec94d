// sgl-bench: benchmarks, one subcommand each (`sgl-bench serving ...`).
#include <cstdio>
#include <string_view>

#include "app/bench_commands.h"

namespace sgl::app {
namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

// Adding a subcommand: one row here (and its run_bench_* in bench_commands.h).
constexpr Subcommand kSubcommands[] = {
    {"serving", "load an OpenAI-compatible server over HTTP (SGLang's bench_serving)",
     run_bench_serving},
    {"one-batch", "one static batch through the model runner: prefill and decode vs. floors",
     run_bench_one_batch},
    {"offline", "synthetic requests through the engine (no HTTP): throughput, engine CPU/step",
     run_bench_offline},
    {"gemm", "a model's decode GEMMs from one CUDA graph, library vs. ours, vs. copy bandwidth",
     run_bench_gemm},
    {"allreduce", "our NCCL all-reduce between this machine's GPUs: latency per message size",
     run_bench_allreduce},
};

void print_usage(std::FILE* out) {
  std::fprintf(out, "usage: sgl-bench SUBCOMMAND [flags]   (sgl-bench SUBCOMMAND --help)\n\n");
  std::fprintf(out, "subcommands:\n");
  for (const Subcommand& s : kSubcommands) std::fprintf(out, "  %-12s %s\n", s.name, s.summary);
}

int run(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(stdout);
    return 0;
  }
  for (const Subcommand& s : kSubcommands) {
    if (name == s.name) return s.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "sgl-bench: unknown subcommand '%s'\n\n", argv[1]);
  print_usage(stderr);
  return 2;
}

}  // namespace

int bench_fail(const char* subcommand, const Status& status) {
  std::fprintf(stderr, "sgl-bench %s: %s\n", subcommand, status.to_string().c_str());
  return status.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace sgl::app

int main(int argc, char** argv) { return sgl::app::run(argc, argv); }
