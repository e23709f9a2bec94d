// sgl-bench allreduce: the latency of our NcclCommunicator's all-reduce between --tp-size GPUs of
// this machine (ranks as threads, as the tensor-parallel engine runs them), per message size, the
// way the model calls it: in place, bf16 by default, on each rank's stream. Two timings per size,
// each the mean over --iters calls measured with CUDA events on rank 0's stream (every rank waits
// for the slowest, so rank 0's time is the group's):
//   eager  back-to-back calls, each launched from the host (what nccl-tests' all_reduce_perf
//          times: NCCL's own latency, launch included)
//   graph  the calls captured in one CUDA graph and replayed (what a decode step's graph pays)
// plus nccl-tests' bus bandwidth (2 (n - 1) / n x bytes / time); then both timings again through
// the communicator the engine makes (distributed::nccl_group with its custom all-reduce).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "app/bench_commands.h"
#include "app/cli_args.h"
#include "distributed/nccl_communicator.h"
#include "distributed/peer_all_reduce.h"
#ifdef SGL_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace sgl::app {
namespace {

constexpr const char* kUsage =
    R"(usage: sgl-bench allreduce [--tp-size N] [--base-gpu-id B] [--sizes 16K,256K]
  [--dtype bfloat16|float32] [--iters 1000] [--output-file F.json]
Times our NCCL communicator's in-place all-reduce over GPUs B .. B+N-1 (N defaults to every
visible GPU): eager calls (nccl-tests' way) and replays of a captured graph (the decode graphs'
way), mean microseconds per all-reduce, and nccl-tests' bus bandwidth; then the same through the
custom all-reduce (a one-shot kernel over peer memory, the engine's default for sums it takes;
NCCL's time again for larger ones).
Keep NCCL_NVLS_ENABLE=0 on machines that share GPUs (NVLink multicast off).
)";

int fail(const Status& s) { return bench_fail("allreduce", s); }

// "16K", "256k", "1M", "4096": bytes.
Result<std::vector<int64_t>> parse_sizes(const std::string& text) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, comma - start);
    int64_t scale = 1;
    if (!item.empty()) {
      const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(item.back())));
      if (last == 'K') scale = 1024;
      if (last == 'M') scale = 1024 * 1024;
      if (scale > 1) item.pop_back();
    }
    char* end = nullptr;
    const long long v = item.empty() ? 0 : std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || end == nullptr || *end != '\0' || v <= 0) {
      return invalid_argument("--sizes: '" + text + "' (expected sizes like 16K,256K,1M)");
    }
    out.push_back(v * scale);
    start = comma + 1;
  }
  return out;
}

#ifdef SGL_WITH_CUDA

#define BENCH_CUDA(expr)                                                                   \
  do {                                                                                     \
    const cudaError_t e = (expr);                                                          \
    if (e != cudaSuccess) {                                                                \
      std::fprintf(stderr, "sgl-bench allreduce: %s: %s\n", #expr, cudaGetErrorString(e)); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

struct Timing {
  double eager_us = 0;
  double graph_us = 0;
};

// Rank `rank`'s part of the measurement; rank 0's events give the times.
void run_rank(distributed::Communicator& comm, int device, const std::vector<int64_t>& sizes,
              DType dtype, int iters, std::vector<Timing>& timings) {
  BENCH_CUDA(cudaSetDevice(device));
  cudaStream_t s = nullptr;
  BENCH_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  backend::Stream stream;
  stream.device = Device::cuda(device);
  stream.native = s;
  const int64_t max_bytes = *std::max_element(sizes.begin(), sizes.end());
  void* buf = nullptr;
  BENCH_CUDA(cudaMalloc(&buf, static_cast<size_t>(max_bytes)));
  BENCH_CUDA(cudaMemset(buf, 0, static_cast<size_t>(max_bytes)));  // zeros: sums stay finite
  cudaEvent_t start = nullptr, stop = nullptr;
  BENCH_CUDA(cudaEventCreate(&start));
  BENCH_CUDA(cudaEventCreate(&stop));
  const int64_t elem = static_cast<int64_t>(dtype_size(dtype));
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Tensor t(buf, dtype, {sizes[i] / elem}, Device::cuda(device));
    for (int w = 0; w < 20; ++w) comm.all_reduce(t, distributed::ReduceOp::kSum, stream);
    BENCH_CUDA(cudaStreamSynchronize(s));
    comm.barrier();
    BENCH_CUDA(cudaEventRecord(start, s));
    for (int k = 0; k < iters; ++k) comm.all_reduce(t, distributed::ReduceOp::kSum, stream);
    BENCH_CUDA(cudaEventRecord(stop, s));
    BENCH_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
    if (comm.rank() == 0) timings[i].eager_us = 1000.0 * ms / iters;
    // The same calls from a graph: 100 per graph, replayed iters / 100 times.
    const int per_graph = std::min(iters, 100), replays = std::max(1, iters / per_graph);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    BENCH_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < per_graph; ++k) comm.all_reduce(t, distributed::ReduceOp::kSum, stream);
    BENCH_CUDA(cudaStreamEndCapture(s, &graph));
    BENCH_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    BENCH_CUDA(cudaGraphLaunch(exec, s));  // warm-up
    BENCH_CUDA(cudaStreamSynchronize(s));
    comm.barrier();
    BENCH_CUDA(cudaEventRecord(start, s));
    for (int k = 0; k < replays; ++k) BENCH_CUDA(cudaGraphLaunch(exec, s));
    BENCH_CUDA(cudaEventRecord(stop, s));
    BENCH_CUDA(cudaEventSynchronize(stop));
    BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
    if (comm.rank() == 0) timings[i].graph_us = 1000.0 * ms / (replays * per_graph);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(buf);
  cudaStreamDestroy(s);
}

std::string human(int64_t bytes) {
  if (bytes % (1024 * 1024) == 0) return std::to_string(bytes / (1024 * 1024)) + " MB";
  if (bytes % 1024 == 0) return std::to_string(bytes / 1024) + " KB";
  return std::to_string(bytes) + " B";
}

int run_cuda(int tp, int base, const std::vector<int64_t>& sizes, DType dtype, int iters,
             const std::string& output_file) {
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
  if (tp == 0) tp = visible - base;
  if (tp < 1 || base + tp > visible) {
    return fail(invalid_argument(
        "--tp-size " + std::to_string(tp) + " from cuda:" + std::to_string(base) + " needs " +
        std::to_string(base + tp) + " GPUs, found " + std::to_string(visible)));
  }
  std::vector<int> devices;
  for (int r = 0; r < tp; ++r) devices.push_back(base + r);
  // NCCL alone, then (at 2 GPUs or more) the communicator as the engine makes it, with the
  // custom all-reduce for the sizes it takes.
  auto measure = [&](bool custom) -> Result<std::vector<Timing>> {
    SGL_ASSIGN_OR_RETURN(auto group, distributed::nccl_group(devices, custom));
    std::vector<Timing> timings(sizes.size());
    std::vector<std::thread> threads;
    for (int r = 0; r < tp; ++r) {
      threads.emplace_back([&, r] {
        run_rank(*group[static_cast<size_t>(r)], devices[static_cast<size_t>(r)], sizes, dtype,
                 iters, timings);
      });
    }
    for (auto& t : threads) t.join();
    return timings;
  };
  auto nccl = measure(false);
  if (!nccl.ok()) return fail(nccl.status());
  std::vector<Timing> custom(sizes.size());
  if (tp > 1) {
    auto measured = measure(true);
    if (!measured.ok()) return fail(measured.status());
    custom = std::move(measured).value();
  }
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  std::printf(
      "all-reduce, %d GPU(s) from cuda:%d, %s, in place, %d calls each (NCCL_NVLS_ENABLE=%s); "
      "custom: the one-shot kernel over peer memory (sums up to %lld KB)\n",
      tp, base, std::string(dtype_name(dtype)).c_str(), iters, nvls ? nvls : "unset",
      static_cast<long long>(distributed::PeerAllReduce::kDefaultMaxBytes / 1024));
  std::printf("%10s %12s %12s %14s %12s %12s\n", "size", "eager us", "graph us", "busbw GB/s",
              "custom eag", "custom gr");
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Timing& t = (*nccl)[i];
    const double best = std::min(t.eager_us, t.graph_us);
    const double busbw =
        tp > 1 ? 2.0 * (tp - 1) / tp * static_cast<double>(sizes[i]) / (best * 1e3) : 0.0;
    std::printf("%10s %12.2f %12.2f %14.2f %12.2f %12.2f\n", human(sizes[i]).c_str(), t.eager_us,
                t.graph_us, busbw, custom[i].eager_us, custom[i].graph_us);
    rows.push_back({{"bytes", sizes[i]},
                    {"eager_us", t.eager_us},
                    {"graph_us", t.graph_us},
                    {"busbw_gbps", busbw},
                    {"custom_eager_us", custom[i].eager_us},
                    {"custom_graph_us", custom[i].graph_us}});
  }
  if (!output_file.empty()) {
    nlohmann::json out = {{"tp_size", tp},
                          {"base_gpu_id", base},
                          {"dtype", std::string(dtype_name(dtype))},
                          {"iters", iters},
                          {"results", rows}};
    std::ofstream(output_file) << out.dump(2) << "\n";
  }
  return 0;
}

#endif

}  // namespace

int run_bench_allreduce(int argc, char** argv) {
  auto args = CliArgs::parse(
      argc, argv, {"--tp-size", "--base-gpu-id", "--sizes", "--dtype", "--iters", "--output-file"},
      {"--help"});
  if (!args.ok()) return fail(args.status());
  if (args->has("--help")) {
    std::cout << kUsage;
    return 0;
  }
  auto tp = args->get_int("--tp-size", 0);
  if (!tp.ok()) return fail(tp.status());
  auto base = args->get_int("--base-gpu-id", 0);
  if (!base.ok()) return fail(base.status());
  auto iters = args->get_int("--iters", 1000);
  if (!iters.ok()) return fail(iters.status());
  if (*tp < 0 || *tp > 64 || *base < 0 || *iters < 1 || *iters > 1000000) {
    return fail(invalid_argument("--tp-size in [0, 64], --base-gpu-id >= 0, --iters >= 1"));
  }
  auto sizes = parse_sizes(args->get("--sizes").value_or("16K,256K"));
  if (!sizes.ok()) return fail(sizes.status());
  const std::string dtype_name = args->get("--dtype").value_or("bfloat16");
  DType dtype = DType::kBF16;
  if (dtype_name == "float32") {
    dtype = DType::kF32;
  } else if (dtype_name != "bfloat16") {
    return fail(invalid_argument("--dtype '" + dtype_name + "' (expected bfloat16 or float32)"));
  }
  for (int64_t& bytes : *sizes) {
    const int64_t e = static_cast<int64_t>(dtype_size(dtype));
    if (bytes % e != 0) bytes += e - bytes % e;
  }
  if (!distributed::nccl_available()) {
    return fail(unimplemented(std::string("sgl-bench allreduce needs NCCL: ") +
                              distributed::nccl_unavailable_reason()));
  }
#ifdef SGL_WITH_CUDA
  return run_cuda(static_cast<int>(*tp), static_cast<int>(*base), *sizes, dtype,
                  static_cast<int>(*iters), args->get("--output-file").value_or(""));
#else
  return fail(unimplemented("sgl-bench allreduce needs a CUDA build"));
#endif
}

}  // namespace sgl::app
