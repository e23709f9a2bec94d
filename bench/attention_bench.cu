// Attention backend benchmark (CUDA): decode and extend on Llama-3-8B head shapes (32 q heads,
// 8 KV heads, head_dim 128), one layer, timed with cudaEvents. Prints a table of microseconds
// (backend forward = KV store + attention; and attention alone for "flash"), achieved KV-read
// GB/s (decode) and attention TFLOP/s (extend), both from the attention-alone time.
// Usage: attention_bench [--backend flash|cuda_ref] [--iters N] [--contiguous] [--sweep-splits]
//   --sweep-splits: also time flash decode at every power-of-two split count.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attention/attention_backend.h"
#include "attention/cuda/flash_attention.h"
#include "attention/cuda/flash_attention_backend.h"
#include "attention/cuda/split_kv_policy.h"
#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_stream.h"
#include "core/buffer.h"

namespace sgl::attention {
namespace {

constexpr int kQHeads = 32, kKvHeads = 8, kHeadDim = 128;

struct Case {
  const char* kind;  // "decode" or "extend"
  int batch;
  int prefix;  // cached tokens per request
  int extend;  // new tokens per request
};

struct Options {
  std::string backend = "flash";
  int iters = 20;
  bool contiguous = false;  // each request's slots in order instead of shuffled
  bool sweep_splits = false;
};

// One batch's index tensors on the device, every request with the same lengths; request b's
// KV sits in slots order[b * seq .. (b + 1) * seq) (distinct across requests).
class BenchBatch {
 public:
  BenchBatch(const Case& c, const std::vector<int32_t>& order, Allocator& gpu,
             cudaStream_t stream) {
    const int seq = c.prefix + c.extend;
    std::vector<int32_t> qo{0}, kv_indptr{0}, kv, loc, positions;
    for (int b = 0; b < c.batch; ++b) {
      prefix_.push_back(c.prefix);
      extend_.push_back(c.extend);
      seq_.push_back(seq);
      qo.push_back(qo.back() + c.extend);
      kv.insert(kv.end(), order.begin() + int64_t{b} * seq, order.begin() + int64_t{b + 1} * seq);
      kv_indptr.push_back(static_cast<int32_t>(kv.size()));
      loc.insert(loc.end(), kv.end() - c.extend, kv.end());
      for (int i = 0; i < c.extend; ++i) positions.push_back(c.prefix + i);
    }
    qo_ = qo;
    const std::vector<int32_t>* sources[] = {&positions, &positions, &loc,       &seq_, &prefix_,
                                             &extend_,   &qo,        &kv_indptr, &kv};
    Tensor* views[] = {&fb_.input_ids, &fb_.positions,          &fb_.out_cache_loc,
                       &fb_.seq_lens,  &fb_.extend_prefix_lens, &fb_.extend_seq_lens,
                       &fb_.qo_indptr, &fb_.kv_indptr,          &fb_.kv_indices};
    for (size_t i = 0; i < std::size(views); ++i) {
      const auto n = static_cast<int64_t>(sources[i]->size());
      buffers_.emplace_back(gpu, DType::kI32, std::initializer_list<int64_t>{n});
      SGL_CUDA_CHECK(cudaMemcpyAsync(buffers_.back().tensor().raw(), sources[i]->data(), n * 4,
                                     cudaMemcpyHostToDevice, stream));
      *views[i] = buffers_.back().tensor();
    }
    SGL_CUDA_CHECK(cudaStreamSynchronize(stream));
    fb_.mode = std::strcmp(c.kind, "decode") == 0 ? ForwardMode::kDecode : ForwardMode::kExtend;
    fb_.batch_size = c.batch;
    fb_.num_tokens = qo.back();
    fb_.max_seq_len = seq;
    fb_.seq_lens_host = seq_;
    fb_.extend_prefix_lens_host = prefix_;
    fb_.extend_seq_lens_host = extend_;
    fb_.qo_indptr_host = qo_;
  }
  const ForwardBatch& fb() const { return fb_; }

 private:
  std::vector<int32_t> prefix_, extend_, seq_, qo_;  // host mirrors the spans point into
  std::vector<Buffer> buffers_;
  ForwardBatch fb_;
};

// Reads `chunks` 16-byte words (a buffer larger than L2), so the timed kernel after it finds
// L2 full of clean, unrelated lines, as after a layer's weight GEMMs; the store that never
// happens keeps the reads alive.
__global__ void read_through_kernel(const uint4* data, int64_t chunks, uint32_t* sink) {
  uint32_t acc = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < chunks;
       i += int64_t{gridDim.x} * blockDim.x) {
    const uint4 v = data[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

// Mean microseconds of `launch` (which queues work on `stream`) over `iters` calls, each timed
// alone after L2 is refilled from `flush`, so KV comes from HBM as in a real decode step.
template <typename Launch>
double time_us(Launch&& launch, const Tensor& flush, int iters, cudaStream_t stream) {
  for (int i = 0; i < 2; ++i) launch();
  cudaEvent_t start, stop;
  SGL_CUDA_CHECK(cudaEventCreate(&start));
  SGL_CUDA_CHECK(cudaEventCreate(&stop));
  double total_ms = 0;
  for (int i = 0; i < iters; ++i) {
    read_through_kernel<<<1024, 256, 0, stream>>>(static_cast<const uint4*>(flush.raw()),
                                                  static_cast<int64_t>(flush.nbytes() / 16),
                                                  static_cast<uint32_t*>(flush.raw()));
    SGL_CUDA_CHECK_LAUNCH();
    SGL_CUDA_CHECK(cudaEventRecord(start, stream));
    launch();
    SGL_CUDA_CHECK(cudaEventRecord(stop, stream));
    SGL_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    SGL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    total_ms += ms;
  }
  SGL_CUDA_CHECK(cudaEventDestroy(start));
  SGL_CUDA_CHECK(cudaEventDestroy(stop));
  return 1000.0 * total_ms / iters;
}

int run(const Options& opt) {
  cudaDeviceProp prop{};
  SGL_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs; backend %s; KV slots %s; Hq %d Hk %d D %d; bf16\n", prop.name,
              prop.multiProcessorCount, opt.backend.c_str(),
              opt.contiguous ? "contiguous" : "shuffled", kQHeads, kKvHeads, kHeadDim);
  std::vector<Case> cases;
  for (int batch : {1, 64, 256}) {
    for (int context : {1024, 8192, 32768}) cases.push_back({"decode", batch, context - 1, 1});
  }
  cases.push_back({"extend", 8, 0, 1024});
  cases.push_back({"extend", 1, 3072, 1024});
  cases.push_back({"extend", 1, 0, 8192});

  int64_t max_tokens = 0;
  for (const Case& c : cases)
    max_tokens = std::max<int64_t>(max_tokens, int64_t{c.batch} * (c.prefix + c.extend));
  backend::CudaAllocator gpu(0);
  backend::CudaStream owned_stream(0);
  const backend::Stream stream = owned_stream.get();
  const auto native = static_cast<cudaStream_t>(stream.native);
  KvPool pool(gpu, KvPoolShape{1, max_tokens + 1, kKvHeads, kHeadDim, DType::kBF16});
  // Constant 0x3c3c (about 0.0115) everywhere: finite scores; timing does not depend on values.
  SGL_CUDA_CHECK(cudaMemsetAsync(pool.k(0).raw(), 0x3c, pool.k(0).nbytes(), native));
  SGL_CUDA_CHECK(cudaMemsetAsync(pool.v(0).raw(), 0x3c, pool.v(0).nbytes(), native));
  std::vector<int32_t> order(max_tokens);
  std::iota(order.begin(), order.end(), 1);
  if (!opt.contiguous) std::shuffle(order.begin(), order.end(), std::mt19937(7));

  const AttentionConfig config{kQHeads, kKvHeads, kHeadDim, 1.f / std::sqrt(float{kHeadDim})};
  auto created = create_attention_backend(opt.backend, Device::cuda(0), config, pool, stream);
  if (!created.ok()) {
    std::fprintf(stderr, "%s\n", created.status().to_string().c_str());
    return 1;
  }
  AttentionBackend& backend = *created.value();
  auto* flash = dynamic_cast<FlashAttentionBackend*>(&backend);
  // Split-KV scratch for the split sweep (the backend keeps its own, sized for its policy).
  const int64_t sweep_rows = 4096LL * kQHeads;
  Buffer sweep_o(gpu, DType::kF32, {sweep_rows, kHeadDim}),
      sweep_lse(gpu, DType::kF32, {sweep_rows});
  Buffer flush(gpu, DType::kF32, {int64_t{64} << 20});  // 256 MiB, over any L2
  SGL_CUDA_CHECK(cudaMemsetAsync(flush.tensor().raw(), 0, flush.nbytes(), native));

  std::printf("%-7s %6s %8s %8s %7s %11s %11s %10s %10s\n", "mode", "batch", "prefix", "new",
              "splits", "forward us", "attn us", "KV GB/s", "TFLOP/s");
  for (const Case& c : cases) {
    BenchBatch batch(c, order, gpu, native);
    const ForwardBatch& fb = batch.fb();
    const int64_t width = int64_t{kQHeads + 2 * kKvHeads} * kHeadDim;
    const int64_t qd = int64_t{kQHeads} * kHeadDim, kd = int64_t{kKvHeads} * kHeadDim;
    Buffer qkv(gpu, DType::kBF16, {fb.num_tokens, width});
    Buffer out(gpu, DType::kBF16, {fb.num_tokens, qd});
    SGL_CUDA_CHECK(cudaMemsetAsync(qkv.tensor().raw(), 0x3c, qkv.nbytes(), native));
    const Tensor q = qkv.tensor().slice_last(0, qd).split_heads(kQHeads);
    const Tensor k = qkv.tensor().slice_last(qd, kd).split_heads(kKvHeads);
    const Tensor v = qkv.tensor().slice_last(qd + kd, kd).split_heads(kKvHeads);
    backend.plan(fb);
    const double forward_us =
        time_us([&] { backend.forward(0, q, k, v, out, fb); }, flush, opt.iters, native);
    const double us =
        flash == nullptr ? forward_us
                         : time_us([&] { flash->attend(0, q, out, fb); }, flush, opt.iters, native);
    const int seq = c.prefix + c.extend;
    // KV bytes each step must read (K and V of every visible token once per KV head).
    const double kv_bytes = 2.0 * c.batch * seq * kKvHeads * kHeadDim * 2;
    // Causal attention FLOPs: query i of a request sees prefix + i + 1 keys; QK^T and PV.
    double pairs = 0;
    for (int i = 0; i < c.extend; ++i) pairs += c.prefix + i + 1;
    const double flops = 4.0 * kHeadDim * kQHeads * c.batch * pairs;
    const bool decode = fb.mode == ForwardMode::kDecode;
    const cuda::DecodeShape shape =
        decode && flash != nullptr ? flash->decode_shape(c.batch) : cuda::DecodeShape{};
    const int splits = shape.num_splits;
    std::printf("%-7s %6d %8d %8d %7d %11.1f %11.1f %10.1f %10.1f\n", c.kind, c.batch, c.prefix,
                c.extend, splits, forward_us, us, kv_bytes / us / 1e3, flops / us / 1e6);
    if (!opt.sweep_splits || !decode || flash == nullptr) continue;
    const cuda::SplitKvScratch scratch{sweep_o.data<float>(), sweep_lse.data<float>(), sweep_rows};
    for (int n = 1; n <= cuda::kMaxSplits && int64_t{c.batch} * n * kQHeads <= sweep_rows; n *= 2) {
      const double sweep_us = time_us(
          [&] {
            cuda::flash_decode(q, pool.layer(0), out, fb, config.scale, {shape.width, n},
                               scratch, stream);
          },
          flush, opt.iters, native);
      std::printf("%-7s %6s %8s %8s %7d %11s %11.1f %10.1f\n", "  sweep", "", "", "", n, "",
                  sweep_us, kv_bytes / sweep_us / 1e3);
    }
  }
  return 0;
}

}  // namespace
}  // namespace sgl::attention

int main(int argc, char** argv) {
  sgl::attention::Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--backend" && i + 1 < argc) {
      opt.backend = argv[++i];
    } else if (arg == "--iters" && i + 1 < argc) {
      opt.iters = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--contiguous") {
      opt.contiguous = true;
    } else if (arg == "--sweep-splits") {
      opt.sweep_splits = true;
    } else {
      std::fprintf(stderr,
                   "usage: attention_bench [--backend flash|cuda_ref] [--iters N] [--contiguous] "
                   "[--sweep-splits]\n");
      return 2;
    }
  }
  return sgl::attention::run(opt);
}
