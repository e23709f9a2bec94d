// The sgl-bench subcommands: each takes its own argv (argv[0] is the subcommand's name) and
// returns the process exit code.
#pragma once

#include "core/status.h"

namespace sgl::app {

// Prints "sgl-bench SUBCOMMAND: <status>" to stderr; returns the exit code (2 for bad arguments).
int bench_fail(const char* subcommand, const Status& status);

// sgl-bench serving: load an OpenAI-compatible server over HTTP (bench_serving/).
int run_bench_serving(int argc, char** argv);
// sgl-bench one-batch: one static batch through the ModelRunner, against the device's floors.
int run_bench_one_batch(int argc, char** argv);
// sgl-bench offline: synthetic requests through the engine without HTTP; throughput.
int run_bench_offline(int argc, char** argv);
// sgl-bench gemm: a model's decode GEMMs alone (library vs. our small-batch kernel) vs. copy
// bandwidth.
int run_bench_gemm(int argc, char** argv);
// sgl-bench allreduce: our NCCL communicator's all-reduce latency between this machine's GPUs.
int run_bench_allreduce(int argc, char** argv);

}  // namespace sgl::app
