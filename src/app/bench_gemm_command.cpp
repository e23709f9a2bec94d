// sgl-bench gemm: the decode GEMMs of a model, alone, against the copy-bandwidth and GEMM-peak
// floors. For each token count it replays one CUDA graph per kind (every layer's qkv, o, gate/up,
// gate/up with SiLU, down; the LM head) and one for the whole step over random bf16 weights,
// through the library GEMM and, up to their token limits, our small-batch kernel
// (kernels/cuda/gemv.h) and our Hopper GEMM (kernels/cuda/hopper_gemm.h); bytes = the weights, read
// once; flops = 2 x tokens x weights.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "app/bench_commands.h"
#include "app/cli_args.h"
#include "app/device_floors.h"
#include "model/model_config.h"
#ifdef SGL_WITH_CUDA
#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_graph.h"
#include "backend/cuda/cuda_stream.h"
#include "core/buffer.h"
#include "kernels/activation.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/stream_gemms.h"
#include "kernels/fill.h"
#endif

namespace sgl::app {
namespace {

constexpr const char* kUsage =
    R"(usage: sgl-bench gemm --config CONFIG.json [--batch-size 1,2,4,8,16,32,64]
  [--output-file F.json]
Replays the decode GEMMs of the model (random bf16 weights) from one CUDA graph per kind, token
count and implementation, then the whole step's; prints achieved bandwidth over the measured
copy bandwidth and achieved TFLOP/s over the measured bf16 GEMM peak.
)";

int fail(const Status& s) { return bench_fail("gemm", s); }

#ifdef SGL_WITH_CUDA

enum class GemmImpl { kLibrary, kSmallBatch, kHopper };
constexpr GemmImpl kImpls[] = {GemmImpl::kLibrary, GemmImpl::kSmallBatch, GemmImpl::kHopper};

const char* impl_name(GemmImpl impl) {
  switch (impl) {
    case GemmImpl::kLibrary:
      return "library";
    case GemmImpl::kSmallBatch:
      return "small-batch";
    case GemmImpl::kHopper:
      return "hopper";
  }
  return "?";
}

// Whether `impl` runs `m` tokens on this stream's GPU.
bool impl_runs(GemmImpl impl, int64_t m, backend::Stream stream) {
  switch (impl) {
    case GemmImpl::kLibrary:
      return true;
    case GemmImpl::kSmallBatch:
      return m <= kernels::cuda::kGemvMaxTokens;
    case GemmImpl::kHopper:
      return m <= kernels::cuda::kHopperGemmMaxTokens &&
             kernels::cuda::StreamGemms::of(stream).hopper.available();
  }
  return false;
}

// The model's GEMMs one kind at a time (every layer's, from one graph), then all together.
enum class GemmSet { kQkv, kO, kGateUp, kGateUpSilu, kDown, kLmHead, kAll };
// Measured in this order: each kind, then the whole step.
constexpr GemmSet kSets[] = {GemmSet::kQkv,        GemmSet::kO,    GemmSet::kGateUp,
                             GemmSet::kGateUpSilu, GemmSet::kDown, GemmSet::kLmHead,
                             GemmSet::kAll};

const char* set_name(GemmSet set) {
  switch (set) {
    case GemmSet::kQkv:
      return "qkv";
    case GemmSet::kO:
      return "o";
    case GemmSet::kGateUp:
      return "gate_up";
    case GemmSet::kGateUpSilu:
      return "gate_up+silu";
    case GemmSet::kDown:
      return "down";
    case GemmSet::kLmHead:
      return "lm_head";
    case GemmSet::kAll:
      return "all";
  }
  return "?";
}

// One layer's projection weights, [out, in] bf16.
struct LayerWeights {
  Buffer qkv, o, gate_up, down;
};

class DecodeGemms {
 public:
  DecodeGemms(const model::ModelConfig& c, int64_t max_tokens, Allocator& gpu,
              backend::Stream stream) {
    const int64_t h = c.hidden_size, inter = c.intermediate_size;
    uint64_t seed = 11;
    auto random = [&](std::initializer_list<int64_t> shape) {
      Buffer b(gpu, DType::kBF16, shape);
      kernels::fill_uniform(b, -0.05f, 0.05f, seed++, stream);  // never time on zeros
      return b;
    };
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
      layers_.push_back({random({c.q_size() + 2 * c.kv_size(), h}), random({h, c.q_size()}),
                         random({2 * inter, h}), random({h, inter})});
    }
    lm_head_ = random({c.vocab_size, h});
    hidden_ = random({max_tokens, h});
    attn_ = random({max_tokens, c.q_size()});
    qkv_out_ = Buffer(gpu, DType::kBF16, {max_tokens, c.q_size() + 2 * c.kv_size()});
    gate_up_ = Buffer(gpu, DType::kBF16, {max_tokens, 2 * inter});
    act_ = random({max_tokens, inter});
    out_ = Buffer(gpu, DType::kBF16, {max_tokens, h});
    logits_ = Buffer(gpu, DType::kF32, {max_tokens, c.vocab_size});
  }

  // Weight bytes the set reads.
  double weight_bytes(GemmSet set) const {
    const bool all = set == GemmSet::kAll;
    double bytes = all || set == GemmSet::kLmHead ? lm_head_.tensor().nbytes() : 0;
    for (const LayerWeights& l : layers_) {
      if (all || set == GemmSet::kQkv) bytes += l.qkv.tensor().nbytes();
      if (all || set == GemmSet::kO) bytes += l.o.tensor().nbytes();
      if (all || set == GemmSet::kGateUp || set == GemmSet::kGateUpSilu) {
        bytes += l.gate_up.tensor().nbytes();
      }
      if (all || set == GemmSet::kDown) bytes += l.down.tensor().nbytes();
    }
    return bytes;
  }

  // Queues the set's GEMMs of one decode step for `m` tokens (kAll: gate/up with SiLU).
  void run(GemmSet set, int64_t m, GemmImpl impl, backend::Stream s) const {
    const Tensor x = hidden_.tensor().slice_rows(0, m), a = attn_.tensor().slice_rows(0, m);
    const Tensor act = act_.tensor().slice_rows(0, m), out = out_.tensor().slice_rows(0, m);
    const Tensor qkv = qkv_out_.tensor().slice_rows(0, m);
    const Tensor gu = gate_up_.tensor().slice_rows(0, m);
    const Tensor logits = logits_.tensor().slice_rows(0, m);
    kernels::cuda::HopperGemm& hopper = kernels::cuda::StreamGemms::of(s).hopper;
    auto linear = [&](const Tensor& in, const Buffer& w, const Tensor& y) {
      switch (impl) {
        case GemmImpl::kLibrary:
          return kernels::cuda::linear_library(in, w, Tensor(), y, s);
        case GemmImpl::kSmallBatch:
          return kernels::cuda::gemv(in, w, Tensor(), y, s);
        case GemmImpl::kHopper:
          return hopper.run(in, w, Tensor(), y, s);
      }
    };
    const bool all = set == GemmSet::kAll;
    for (const LayerWeights& l : layers_) {
      if (all || set == GemmSet::kQkv) linear(x, l.qkv, qkv);
      if (all || set == GemmSet::kO) linear(a, l.o, out);
      if (set == GemmSet::kGateUp) linear(x, l.gate_up, gu);
      if (all || set == GemmSet::kGateUpSilu) {
        if (impl == GemmImpl::kSmallBatch) {
          kernels::cuda::gemv_silu_and_mul(x, l.gate_up, act, s);
        } else if (impl == GemmImpl::kHopper) {
          hopper.run_silu_and_mul(x, l.gate_up, act, s);
        } else {
          kernels::cuda::linear_library(x, l.gate_up, Tensor(), gu, s);
          kernels::cuda::silu_and_mul(gu, act, s);
        }
      }
      if (all || set == GemmSet::kDown) linear(act, l.down, out);
    }
    if (all || set == GemmSet::kLmHead) linear(x, lm_head_, logits);
  }

 private:
  std::vector<LayerWeights> layers_;
  Buffer lm_head_, hidden_, attn_, qkv_out_, gate_up_, act_, out_, logits_;
};

int run_cuda(const model::ModelConfig& config, const std::vector<int32_t>& token_counts,
             const std::string& output_file) {
  backend::CudaAllocator gpu(0);
  backend::CudaStream owned(0);
  const backend::Stream stream = owned.get();
  auto floors = measure_device_floors(gpu, stream);
  if (!floors.ok()) return fail(floors.status());
  const int64_t max_tokens = *std::max_element(token_counts.begin(), token_counts.end());
  const DecodeGemms gemms(config, max_tokens, gpu, stream);
  std::printf(
      "copy bandwidth %.0f GB/s, bf16 GEMM peak %.0f TFLOP/s; decode GEMM weights %.2f GB\n",
      floors->copy_bytes_per_s / 1e9, floors->gemm_flops_per_s / 1e12,
      gemms.weight_bytes(GemmSet::kAll) / 1e9);
  std::printf("%-8s %-14s %-12s %10s %10s %8s %9s %8s\n", "tokens", "gemms", "impl", "time (ms)",
              "GB/s", "of copy", "TFLOP/s", "of peak");
  nlohmann::json rows = nlohmann::json::array();
  auto measure = [&](GemmSet set, int32_t m, GemmImpl impl) {
    const double bytes = gemms.weight_bytes(set);
    const double flops = static_cast<double>(m) * bytes;  // 2 m flops per bf16 weight
    gemms.run(set, m, impl, stream);  // eagerly first: library plans are made outside capture
    const backend::CudaGraph graph =
        backend::CudaGraph::capture(stream, [&] { gemms.run(set, m, impl, stream); });
    const double s = median_seconds([&] { graph.replay(stream); }, stream, 5, 7);
    const double fraction = bytes / s / floors->copy_bytes_per_s;
    const double compute_fraction = flops / s / floors->gemm_flops_per_s;
    std::printf("%-8d %-14s %-12s %10.3f %10.0f %7.1f%% %9.0f %7.1f%%\n", m, set_name(set),
                impl_name(impl), s * 1e3, bytes / s / 1e9, 100 * fraction, flops / s / 1e12,
                100 * compute_fraction);
    rows.push_back({{"tokens", m},
                    {"gemms", set_name(set)},
                    {"impl", impl_name(impl)},
                    {"seconds", s},
                    {"bytes", bytes},
                    {"flops", flops},
                    {"fraction_of_copy", fraction},
                    {"fraction_of_gemm_peak", compute_fraction}});
  };
  // Every set at each token count, through each implementation that takes that many tokens.
  for (int32_t m : token_counts) {
    for (GemmSet set : kSets) {
      for (GemmImpl impl : kImpls) {
        if (impl_runs(impl, m, stream)) measure(set, m, impl);
      }
    }
  }
  if (!output_file.empty()) {
    std::ofstream out(output_file);
    out << nlohmann::json{{"copy_bytes_per_s", floors->copy_bytes_per_s}, {"results", rows}}.dump(2)
        << "\n";
    if (!out) return fail(internal_error("cannot write " + output_file));
  }
  return 0;
}

#endif  // SGL_WITH_CUDA

}  // namespace

int run_bench_gemm(int argc, char** argv) {
  auto args = CliArgs::parse(argc, argv, {"--config", "--batch-size", "--output-file"}, {"--help"});
  if (!args.ok()) return fail(args.status());
  if (args->has("--help")) {
    std::cout << kUsage;
    return 0;
  }
  const auto config_path = args->get("--config");
  if (!config_path) {
    std::cerr << kUsage;
    return fail(invalid_argument("--config is required"));
  }
  auto config = model::load_model_config_file(*config_path);
  if (!config.ok()) return fail(config.status());
  auto token_counts = args->get_int_list("--batch-size");
  if (!token_counts.ok()) return fail(token_counts.status());
  if (token_counts->empty()) *token_counts = {1, 2, 4, 8, 16, 32, 64};
  if (*std::min_element(token_counts->begin(), token_counts->end()) < 1) {
    return fail(invalid_argument("--batch-size values must be >= 1"));
  }
#ifdef SGL_WITH_CUDA
  return run_cuda(*config, *token_counts, args->get("--output-file").value_or(""));
#else
  return fail(unimplemented("sgl-bench gemm needs a CUDA build"));
#endif
}

}  // namespace sgl::app
