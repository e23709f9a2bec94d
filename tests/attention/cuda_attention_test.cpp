// FlashAttentionBackend ("flash") parity against the reference CUDA kernel over head dims, GQA
// ratios (7 q heads per KV head among them), decode and extend batch shapes (prefixes at KV tile
// edges), shuffled KV slots, outputs poisoned with NaN first; at head_dim 128 the mma.sync
// extend kernel too (on Hopper the backend takes the warpgroup one); KV store contents; decode
// replayed from a CUDA graph with new lengths. Each also over FP8 caches (--kv-cache-dtype
// fp8_e4m3 / fp8_e5m2, at power-of-two scales, which widen to bf16 exactly): the flash kernels
// against the reference reading the same codes, and the stored codes against the host's
// rounding (core/fp8.h). Label: cuda.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "attention/attention_backend.h"
#include "attention/cuda/flash_attention.h"
#include "attention/cuda/flash_attention_backend.h"
#include "attention/cuda/reference_attention.h"
#include "attention/paged_batch.h"
#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_stream.h"
#include "core/fp8.h"
#include "core/half.h"
#include "kernels/rms_norm.h"
#include "kernels/rope.h"

namespace sgl::attention {
namespace {

using test::DeviceBatch;
using test::HostBatch;
using test::make_host_batch;
using test::RequestLens;

struct HeadShape {
  int q_heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  DType kv = DType::kBF16;  // the cache's dtype: bf16, f8e4m3 or f8e5m2
};

// The FP8 pools' scales: powers of two, so float(code) * scale is exact in bf16 and the flash
// kernels' widening equals the reference's f32 reading.
constexpr KvScales kFp8Scales{0.5f, 2.f};

// Output error bound, per (token, q head) row: max |flash - ref| <= kRelTol * max |ref| + kAbsTol.
// Both outputs are bf16 (rounding alone differs by up to 2^-8 relative) and flash rounds P to
// bf16 before P @ V.
constexpr double kRelTol = 2e-2;
constexpr double kAbsTol = 1e-5;
constexpr int64_t kPoolSlots = 40000;
constexpr uint16_t kBf16Nan = 0x7fc0;

// Random bf16 bits, uniform in [-range, range).
std::vector<uint16_t> random_bf16(size_t n, float range, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-range, range);
  std::vector<uint16_t> out(n);
  for (auto& x : out) x = float_to_bf16(dist(rng));
  return out;
}

// NOTE: copies go through `stream` and wait for it: a plain cudaMemcpy from pageable memory
// may return before its DMA lands, and the backend's non-blocking stream would not wait for it.
void upload(const std::vector<uint16_t>& host, const Tensor& t, cudaStream_t stream) {
  SGL_CHECK_EQ(host.size() * 2, t.nbytes());
  SGL_CUDA_CHECK(cudaMemcpyAsync(t.raw(), host.data(), t.nbytes(), cudaMemcpyHostToDevice, stream));
  SGL_CUDA_CHECK(cudaStreamSynchronize(stream));
}

std::vector<uint16_t> download(const Tensor& t, cudaStream_t stream) {
  std::vector<uint16_t> host(t.numel());
  SGL_CUDA_CHECK(cudaStreamSynchronize(stream));
  SGL_CUDA_CHECK(cudaMemcpy(host.data(), t.raw(), t.nbytes(), cudaMemcpyDeviceToHost));
  return host;
}

// Any tensor's bytes (the caches, bf16 or FP8).
std::vector<uint8_t> download_bytes(const Tensor& t, cudaStream_t stream) {
  std::vector<uint8_t> host(t.nbytes());
  SGL_CUDA_CHECK(cudaStreamSynchronize(stream));
  SGL_CUDA_CHECK(cudaMemcpy(host.data(), t.raw(), t.nbytes(), cudaMemcpyDeviceToHost));
  return host;
}
void upload_bytes(const std::vector<uint8_t>& host, const Tensor& t, cudaStream_t stream) {
  SGL_CHECK_EQ(host.size(), t.nbytes());
  SGL_CUDA_CHECK(cudaMemcpyAsync(t.raw(), host.data(), t.nbytes(), cudaMemcpyHostToDevice, stream));
  SGL_CUDA_CHECK(cudaStreamSynchronize(stream));
}

class FlashAttentionTest : public ::testing::TestWithParam<HeadShape> {
 protected:
  void SetUp() override {
    const HeadShape s = GetParam();
    pool_ =
        std::make_unique<KvPool>(gpu_, KvPoolShape{1, kPoolSlots, s.kv_heads, s.head_dim, s.kv});
    const size_t n = static_cast<size_t>(kPoolSlots) * s.kv_heads * s.head_dim;
    if (fp8()) {
      pool_->set_scales(0, kFp8Scales);
      std::uniform_real_distribution<float> dist(-1.f, 1.f);
      for (const Tensor* t : {&pool_->k(0), &pool_->v(0)}) {
        const float scale = t == &pool_->k(0) ? kFp8Scales.k : kFp8Scales.v;
        std::vector<uint8_t> codes(n);
        for (uint8_t& c : codes) c = float_to_fp8(s.kv, dist(rng_) / scale);
        upload_bytes(codes, *t, native());
      }
    } else {
      for (const Tensor* t : {&pool_->k(0), &pool_->v(0)})
        upload(random_bf16(n, 1.f, rng_), *t, native());
    }
    config_ = {s.q_heads, s.kv_heads, s.head_dim, 1.f / std::sqrt(static_cast<float>(s.head_dim))};
    auto backend = create_attention_backend("flash", Device::cuda(0), config_, *pool_, stream());
    ASSERT_TRUE(backend.ok()) << backend.status().to_string();
    backend_ = std::move(backend).value();
  }

  backend::Stream stream() const { return stream_.get(); }
  bool fp8() const { return is_fp8_kv(GetParam().kv); }
  void check_rope_fusion(bool with_norm);
  cudaStream_t native() const { return static_cast<cudaStream_t>(stream_.get().native); }

  // New tokens' q|k|v rows, as the model's fused projection lays them out: [T, (Hq + 2Hk) D].
  Buffer make_qkv(int64_t tokens) {
    const HeadShape s = GetParam();
    const int64_t width = static_cast<int64_t>(s.q_heads + 2 * s.kv_heads) * s.head_dim;
    Buffer qkv(gpu_, DType::kBF16, {tokens, width});
    // q is wider than k so that the softmax is not flat.
    upload(random_bf16(tokens * width, 2.f, rng_), qkv, native());
    return qkv;
  }

  // Runs `batch` through the flash backend and the reference; checks outputs (every element
  // written: out starts as NaN) and KV stores (brute_force: the reference too, against a host
  // softmax over the keys each row may see). portable_extend: at head_dim 128 also the mma.sync
  // extend kernel straight, which the backend leaves to GPUs without the Hopper one.
  void check_batch(const HostBatch& host, const std::string& what, bool brute_force = false,
                   bool portable_extend = false) {
    const HeadShape s = GetParam();
    DeviceBatch batch(host, gpu_, native());
    const ForwardBatch& fb = batch.fb();
    const int64_t tokens = fb.num_tokens, qd = int64_t{s.q_heads} * s.head_dim;
    const int64_t kd = int64_t{s.kv_heads} * s.head_dim;
    Buffer qkv = make_qkv(tokens);
    const Tensor q = qkv.tensor().slice_last(0, qd).split_heads(s.q_heads);
    const Tensor k = qkv.tensor().slice_last(qd, kd).split_heads(s.kv_heads);
    const Tensor v = qkv.tensor().slice_last(qd + kd, kd).split_heads(s.kv_heads);
    Buffer out(gpu_, DType::kBF16, {tokens, qd}), ref(gpu_, DType::kBF16, {tokens, qd});
    const std::vector<uint16_t> nans(static_cast<size_t>(tokens * qd), kBf16Nan);
    upload(nans, out, native());
    backend_->plan(fb);
    backend_->forward(0, q, k, v, out, fb);
    cuda::reference_attention(q, pool_->layer(0), ref, fb, config_.scale, stream());
    SGL_CUDA_CHECK(cudaStreamSynchronize(native()));
    SGL_CUDA_CHECK(cudaGetLastError());
    const std::vector<uint16_t> expected = download(ref, native());
    expect_close(download(out, native()), expected, tokens, what);
    if (portable_extend && s.head_dim == 128) {  // other dims: the backend's kernel already
      upload(nans, out, native());
      cuda::flash_extend(q, pool_->layer(0), out, fb, config_.scale, stream(),
                         /*hopper=*/false);
      expect_close(download(out, native()), expected, tokens, what + " (mma.sync extend)");
    }
    check_kv_store(download(qkv, native()), host.out_cache_loc, what);
    if (brute_force) {
      expect_close(download(ref, native()), host_attention(host, download(qkv, native())), tokens,
                   what + " (reference vs host)");
    }
  }

  // Each (token, q head) row's softmax over its request's prefix and the new tokens its tree mask
  // row names (all up to itself without one), in double from the pool's bf16 K/V; bf16 out.
  // Tokens spread over the host's threads (a tree sweep's batch takes minutes on one).
  std::vector<uint16_t> host_attention(const HostBatch& h, const std::vector<uint16_t>& qkv) {
    const HeadShape s = GetParam();
    const std::vector<uint8_t> kc = download_bytes(pool_->k(0), native());
    const std::vector<uint8_t> vc = download_bytes(pool_->v(0), native());
    const int64_t dim = s.head_dim, width = int64_t{s.q_heads + 2 * s.kv_heads} * dim;
    const bool fp8_cache = fp8();
    const std::array<float, 256>* table = fp8_cache ? &fp8_table(s.kv) : nullptr;
    // Row (slot, KV head) of the K (which 0) or V cache as doubles.
    auto cache_row = [&](const std::vector<uint8_t>& bytes, int64_t slot, int64_t kvh, int which,
                         double* row) {
      const size_t first = static_cast<size_t>((slot * s.kv_heads + kvh) * dim);
      const float scale = which == 0 ? kFp8Scales.k : kFp8Scales.v;
      for (int64_t d = 0; d < dim; ++d) {
        if (fp8_cache) {
          row[d] = double{(*table)[bytes[first + d]] * scale};
        } else {
          uint16_t bits;
          std::memcpy(&bits, bytes.data() + 2 * (first + d), 2);
          row[d] = bf16_to_float(bits);
        }
      }
    };
    std::vector<uint16_t> out(static_cast<size_t>(h.num_tokens()) * s.q_heads * dim);
    auto one_token = [&](int32_t b, int32_t t) {
      const int32_t prefix = h.prefix_lens[b];
      const int32_t* slots = h.kv_indices.data() + h.kv_indptr[b];
      const int32_t i = t - h.qo_indptr[b];
      std::vector<int32_t> seen(slots, slots + prefix);
      for (int32_t j = 0; j <= i; ++j) {
        if (h.tree_mask.empty() || ((h.tree_mask[t] >> j) & 1) != 0) {
          seen.push_back(slots[prefix + j]);
        }
      }
      std::vector<double> q(dim), row(dim), o(dim), w(seen.size());
      for (int hq = 0; hq < s.q_heads; ++hq) {
        const int64_t kvh = hq / (s.q_heads / s.kv_heads);
        for (int64_t d = 0; d < dim; ++d) q[d] = bf16_to_float(qkv[t * width + hq * dim + d]);
        for (size_t k = 0; k < seen.size(); ++k) {
          cache_row(kc, seen[k], kvh, 0, row.data());
          double dot = 0;
          for (int64_t d = 0; d < dim; ++d) dot += q[d] * row[d];
          w[k] = dot * config_.scale;
        }
        const double max = *std::max_element(w.begin(), w.end());
        double sum = 0;
        for (double& x : w) sum += (x = std::exp(x - max));
        std::fill(o.begin(), o.end(), 0.0);
        for (size_t k = 0; k < seen.size(); ++k) {
          cache_row(vc, seen[k], kvh, 1, row.data());
          for (int64_t d = 0; d < dim; ++d) o[d] += w[k] / sum * row[d];
        }
        for (int64_t d = 0; d < dim; ++d) {
          out[(t * s.q_heads + hq) * dim + d] = float_to_bf16(static_cast<float>(o[d]));
        }
      }
    };
    std::vector<std::pair<int32_t, int32_t>> tokens;  // (request, token)
    for (int32_t b = 0; b < h.batch_size(); ++b) {
      for (int32_t t = h.qo_indptr[b]; t < h.qo_indptr[b + 1]; ++t) tokens.emplace_back(b, t);
    }
    std::atomic<size_t> next{0};
    std::vector<std::thread> workers(std::max(1u, std::thread::hardware_concurrency()));
    for (std::thread& worker : workers) {
      worker = std::thread([&] {
        for (size_t n = next++; n < tokens.size(); n = next++) {
          one_token(tokens[n].first, tokens[n].second);
        }
      });
    }
    for (std::thread& worker : workers) worker.join();
    return out;
  }

  void expect_close(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want,
                    int64_t tokens, const std::string& what) {
    const HeadShape s = GetParam();
    double worst = 0;  // max over rows of err / (kRelTol * row max + kAbsTol)
    double worst_rel = 0;
    int64_t bad_rows = 0;
    for (int64_t row = 0; row < tokens * s.q_heads; ++row) {
      double err = 0, mag = 0;
      for (int d = 0; d < s.head_dim; ++d) {
        const double x = bf16_to_float(got[row * s.head_dim + d]);
        const double y = bf16_to_float(want[row * s.head_dim + d]);
        err = std::isnan(x) ? INFINITY : std::max(err, std::abs(x - y));
        mag = std::max(mag, std::abs(y));
      }
      const double ratio = err / (kRelTol * mag + kAbsTol);
      if (ratio > 1) ++bad_rows;
      worst = std::max(worst, ratio);
      worst_rel = std::max(worst_rel, err / std::max(mag, 1e-6));
    }
    EXPECT_EQ(bad_rows, 0) << what << ": " << bad_rows << " rows out of tolerance, worst " << worst
                           << "x the bound";
    std::printf("  %-48s tokens %6lld  max row rel err %.2e\n", what.c_str(),
                static_cast<long long>(tokens), worst_rel);
  }

  // Every new token's K and V now sit bit-exact in its out_cache_loc slot (FP8: as the host
  // rounds value / scale).
  void check_kv_store(const std::vector<uint16_t>& qkv, const std::vector<int32_t>& slots,
                      const std::string& what) {
    const HeadShape s = GetParam();
    const int64_t kd = int64_t{s.kv_heads} * s.head_dim;
    const int64_t width = int64_t{s.q_heads} * s.head_dim + 2 * kd;
    const int64_t element = fp8() ? 1 : 2;
    std::vector<uint8_t> row(kd * element), want(kd * element);
    int64_t mismatches = 0;
    for (size_t t = 0; t < slots.size(); ++t) {
      for (int which = 0; which < 2; ++which) {
        const Tensor& cache = which == 0 ? pool_->k(0) : pool_->v(0);
        const auto* src = static_cast<const uint8_t*>(cache.raw()) + slots[t] * kd * element;
        SGL_CUDA_CHECK(cudaMemcpy(row.data(), src, row.size(), cudaMemcpyDeviceToHost));
        const uint16_t* values =
            qkv.data() + t * width + int64_t{s.q_heads} * s.head_dim + which * kd;
        if (fp8()) {
          const float scale = which == 0 ? kFp8Scales.k : kFp8Scales.v;
          for (int64_t i = 0; i < kd; ++i)
            want[i] = float_to_fp8(s.kv, bf16_to_float(values[i]) / scale);
        } else {
          std::memcpy(want.data(), values, want.size());
        }
        mismatches += row != want;
      }
    }
    EXPECT_EQ(mismatches, 0) << what << ": KV rows not stored";
  }

  std::vector<RequestLens> decode_requests(int batch, int context) {
    return std::vector<RequestLens>(batch, RequestLens{context - 1, 1});
  }

  backend::CudaAllocator gpu_{0};
  backend::CudaStream stream_{0};
  std::mt19937 rng_{20240607};
  std::unique_ptr<KvPool> pool_;
  AttentionConfig config_;
  std::unique_ptr<AttentionBackend> backend_;
};

TEST_P(FlashAttentionTest, DecodeSweep) {
  for (int batch : {1, 3, 64, 257}) {
    for (int context : {1, 7, 100, 1024, 4097}) {
      check_batch(
          make_host_batch(ForwardMode::kDecode, decode_requests(batch, context), kPoolSlots, rng_),
          "decode bs " + std::to_string(batch) + " ctx " + std::to_string(context));
    }
  }
  check_batch(make_host_batch(ForwardMode::kDecode, decode_requests(1, 33000), kPoolSlots, rng_),
              "decode bs 1 ctx 33000");
  std::vector<RequestLens> ragged;
  std::uniform_int_distribution<int> len(1, 5000);
  for (int b = 0; b < 37; ++b) ragged.push_back({len(rng_) - 1, 1});
  check_batch(make_host_batch(ForwardMode::kDecode, ragged, kPoolSlots, rng_),
              "decode bs 37 ragged ctx 1..5000");
}

TEST_P(FlashAttentionTest, ExtendSweep) {
  std::vector<RequestLens> all;
  for (int prefix : {0, 1, 63, 500}) {
    for (int extend : {1, 2, 17, 128, 1000}) all.push_back({prefix, extend});
  }
  std::shuffle(all.begin(), all.end(), rng_);
  check_batch(make_host_batch(ForwardMode::kExtend, all, kPoolSlots, rng_),
              "extend prefix {0,1,63,500} x new {1,2,17,128,1000}", false, true);
  for (int extend : {1, 2, 17, 128, 1000}) {
    check_batch(make_host_batch(ForwardMode::kExtend, {{0, extend}}, kPoolSlots, rng_),
                "extend bs 1 prefix 0 new " + std::to_string(extend), false, true);
  }
  check_batch(make_host_batch(ForwardMode::kExtend, {{3072, 1024}}, kPoolSlots, rng_),
              "extend bs 1 prefix 3072 new 1024", false, true);
  // Prefixes at and beside the KV tiles' edges (64 and 128 tokens), short and long new parts:
  // the causal diagonal on a tile's first or last column.
  std::vector<RequestLens> edges;
  for (int prefix : {63, 64, 65, 127, 128, 129, 255, 256, 257}) {
    for (int extend : {1, 5, 17, 130}) edges.push_back({prefix, extend});
  }
  std::shuffle(edges.begin(), edges.end(), rng_);
  check_batch(make_host_batch(ForwardMode::kExtend, edges, kPoolSlots, rng_),
              "extend prefix {63..257 at tile edges} x new {1,5,17,130}", false, true);
  // A prefill chunk with running decodes (one new token each).
  std::vector<RequestLens> mixed = {{63, 1000}};
  std::uniform_int_distribution<int> len(1, 3000);
  for (int b = 0; b < 40; ++b) mixed.push_back({len(rng_), 1});
  std::shuffle(mixed.begin(), mixed.end(), rng_);
  check_batch(make_host_batch(ForwardMode::kMixed, mixed, kPoolSlots, rng_),
              "mixed 1 x (63 + 1000) + 40 decodes", false, true);
}

// A causal verify (TARGET_VERIFY): each request's last token and its drafts after prefixes of 0
// to 5000 tokens. Up to 16 new tokens a request run through the decode kernel, a row per new
// token over its request's KV up to itself; more take the extend kernel. Against the reference
// (and the reference against the host on a small case).
TEST_P(FlashAttentionTest, VerifySweep) {
  std::uniform_int_distribution<int> prefix(0, 5000), some(1, 16);
  for (int batch : {1, 5, 64}) {
    for (int fresh : {2, 4, 6, 16, 17}) {
      std::vector<RequestLens> requests;
      for (int b = 0; b < batch; ++b) requests.push_back({prefix(rng_), fresh});
      check_batch(make_host_batch(ForwardMode::kTargetVerify, requests, kPoolSlots, rng_),
                  "verify bs " + std::to_string(batch) + " new " + std::to_string(fresh));
    }
  }
  std::vector<RequestLens> ragged;
  for (int b = 0; b < 23; ++b) ragged.push_back({prefix(rng_), some(rng_)});
  ragged.push_back({0, 3});  // no prefix
  check_batch(make_host_batch(ForwardMode::kTargetVerify, ragged, kPoolSlots, rng_),
              "verify bs 24 ragged new 1..16");
  check_batch(make_host_batch(ForwardMode::kTargetVerify, {{40, 5}, {7, 2}}, kPoolSlots, rng_),
              "verify bs 2 small", /*brute_force=*/true);
}

// A tree verify (EAGLE tree drafts): each request's root and draft nodes as one extend with a
// tree mask, beside plain decodes: chains, stars and random trees of up to 64 tokens after
// prefixes of 0 to 3000 tokens. Flash against the reference, and the reference against the host.
TEST_P(FlashAttentionTest, TreeMaskSweep) {
  std::uniform_int_distribution<int> coin(0, 1);
  auto tree = [&](int kind, int nodes) {  // parents of nodes 1..nodes: chain, star or random
    std::vector<int32_t> parents;
    for (int i = 0; i < nodes; ++i) {
      parents.push_back(kind == 0   ? i
                        : kind == 1 ? 0
                                    : std::uniform_int_distribution<int>(0, i)(rng_));
    }
    return parents;
  };
  for (int round = 0; round < 3; ++round) {
    std::vector<RequestLens> lens;
    std::vector<std::vector<int32_t>> parents;  // empty: a plain decode
    int kind = 0;
    for (int prefix : {0, 1, 63, 500, 3000}) {
      for (int nodes : {0, 1, 7, 20, 63}) {
        if (nodes == 0 && prefix == 0) continue;
        lens.push_back({prefix, nodes + 1});
        parents.push_back(nodes == 0 ? std::vector<int32_t>{} : tree(kind++ % 3, nodes));
        if (coin(rng_)) {  // a plain decode beside it
          lens.push_back({prefix + 5, 1});
          parents.emplace_back();
        }
      }
    }
    HostBatch h = make_host_batch(ForwardMode::kMixed, lens, kPoolSlots, rng_);
    for (size_t b = 0; b < lens.size(); ++b) {
      uint64_t rows[64];
      rows[0] = 1;
      for (int i = 1; i < lens[b].extend; ++i) {
        rows[i] = parents[b].empty() ? (rows[i - 1] << 1 | 1)
                                     : rows[parents[b][i - 1]] | (uint64_t{1} << i);
      }
      h.tree_mask.insert(h.tree_mask.end(), rows, rows + lens[b].extend);
    }
    check_batch(h, "tree verify round " + std::to_string(round), /*brute_force=*/true);
  }
  // One request, one chain: the mask changes nothing against the causal batch.
  HostBatch chain = make_host_batch(ForwardMode::kExtend, {{200, 9}}, kPoolSlots, rng_);
  check_batch(chain, "causal 200 + 9", /*brute_force=*/true);
  for (int i = 0; i < 9; ++i) chain.tree_mask.push_back(~uint64_t{0} >> (63 - i));
  check_batch(chain, "chain mask 200 + 9", /*brute_force=*/true);
}

// Decode captured once in a CUDA graph, then replayed after new lengths and slots are written
// into the same device tensors (longer contexts than at capture).
TEST_P(FlashAttentionTest, DecodeGraphReplay) {
  const HeadShape s = GetParam();
  const int batch = 5;
  const int64_t qd = int64_t{s.q_heads} * s.head_dim, kd = int64_t{s.kv_heads} * s.head_dim;
  const std::vector<RequestLens> first = decode_requests(batch, 100);
  const std::vector<RequestLens> second = {{4999, 1}, {0, 1}, {2047, 1}, {63, 1}, {9000, 1}};
  DeviceBatch dev(make_host_batch(ForwardMode::kDecode, first, kPoolSlots, rng_), gpu_, native(),
                  /*kv_capacity=*/20000);
  Buffer qkv = make_qkv(batch);
  const Tensor q = qkv.tensor().slice_last(0, qd).split_heads(s.q_heads);
  const Tensor k = qkv.tensor().slice_last(qd, kd).split_heads(s.kv_heads);
  const Tensor v = qkv.tensor().slice_last(qd + kd, kd).split_heads(s.kv_heads);
  Buffer out(gpu_, DType::kBF16, {batch, qd}), ref(gpu_, DType::kBF16, {batch, qd});
  backend_->plan(dev.fb());
  backend_->forward(0, q, k, v, out, dev.fb());  // warm-up outside capture
  cudaGraph_t graph = nullptr;
  SGL_CUDA_CHECK(cudaStreamBeginCapture(native(), cudaStreamCaptureModeThreadLocal));
  backend_->forward(0, q, k, v, out, dev.fb());
  SGL_CUDA_CHECK(cudaStreamEndCapture(native(), &graph));
  cudaGraphExec_t exec = nullptr;
  SGL_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (const auto& requests : {first, second}) {
    dev.rewrite(make_host_batch(ForwardMode::kDecode, requests, kPoolSlots, rng_));
    SGL_CUDA_CHECK(cudaGraphLaunch(exec, native()));
    cuda::reference_attention(q, pool_->layer(0), ref, dev.fb(), config_.scale, stream());
    expect_close(download(out, native()), download(ref, native()), batch, "graph replay");
  }
  SGL_CUDA_CHECK(cudaGraphExecDestroy(exec));
  SGL_CUDA_CHECK(cudaGraphDestroy(graph));
}

// forward_with_rope (RoPE fused with the KV store, or for decode into the decode kernel) ==
// kernels::rope then forward(): the same output and cache rows, bit for bit, for decode batches
// (narrow and wide CTAs, the new position in the first, a middle and the last split) and a mixed
// batch, whose q is also rotated in place alike. With a QkNorm, against kernels::qk_rms_norm
// before those (head dims 64 and 128; elsewhere the backend declines it).
void FlashAttentionTest::check_rope_fusion(bool with_norm) {
  const HeadShape s = GetParam();
  const int64_t qd = int64_t{s.q_heads} * s.head_dim, kd = int64_t{s.kv_heads} * s.head_dim;
  const int64_t max_pos = 8192;
  std::vector<float> table(max_pos * s.head_dim);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  for (float& x : table) x = unit(rng_);
  Buffer cos_sin(gpu_, DType::kF32, {max_pos, s.head_dim});
  SGL_CUDA_CHECK(cudaMemcpyAsync(cos_sin.tensor().raw(), table.data(), cos_sin.tensor().nbytes(),
                                 cudaMemcpyHostToDevice, native()));
  Buffer q_weight(gpu_, DType::kBF16, {s.head_dim}), k_weight(gpu_, DType::kBF16, {s.head_dim});
  for (const Buffer* w : {&q_weight, &k_weight}) {
    std::vector<uint16_t> host = random_bf16(s.head_dim, 0.5f, rng_);
    for (uint16_t& x : host) x = float_to_bf16(1.f + bf16_to_float(x));  // in [0.5, 1.5)
    upload(host, *w, native());
  }
  const QkNorm norm{q_weight, k_weight, 1e-6f};
  const bool fusable = s.head_dim == 64 || s.head_dim == 128;
  std::vector<std::pair<ForwardMode, std::vector<RequestLens>>> cases;
  for (int batch : {1, 3, 257}) {
    for (int context : {1, 100, 1000, 5000}) {
      cases.emplace_back(ForwardMode::kDecode, decode_requests(batch, context));
    }
  }
  cases.emplace_back(ForwardMode::kMixed, std::vector<RequestLens>{{63, 200}, {10, 1}, {500, 1}});
  for (const auto& [mode, requests] : cases) {
    const std::string what = std::string(mode == ForwardMode::kDecode ? "decode" : "mixed") +
                             " bs " + std::to_string(requests.size()) + " ctx " +
                             std::to_string(requests[0].prefix + requests[0].extend);
    DeviceBatch batch(make_host_batch(mode, requests, kPoolSlots, rng_), gpu_, native());
    const ForwardBatch& fb = batch.fb();
    Buffer qkv = make_qkv(fb.num_tokens);
    Buffer qkv_copy(gpu_, DType::kBF16, qkv.tensor().shape());
    SGL_CUDA_CHECK(cudaMemcpyAsync(qkv_copy.tensor().raw(), qkv.tensor().raw(),
                                   qkv.tensor().nbytes(), cudaMemcpyDeviceToDevice, native()));
    auto views = [&](const Buffer& b) {
      return std::array<Tensor, 3>{b.tensor().slice_last(0, qd).split_heads(s.q_heads),
                                   b.tensor().slice_last(qd, kd).split_heads(s.kv_heads),
                                   b.tensor().slice_last(qd + kd, kd).split_heads(s.kv_heads)};
    };
    const auto [q1, k1, v1] = views(qkv);
    const auto [q2, k2, v2] = views(qkv_copy);
    Buffer out1(gpu_, DType::kBF16, {fb.num_tokens, qd}),
        out2(gpu_, DType::kBF16, {fb.num_tokens, qd});
    backend_->plan(fb);
    // Both paths start from the same cache, without the new tokens' rows.
    const std::vector<uint8_t> k_cache0 = download_bytes(pool_->k(0), native());
    const std::vector<uint8_t> v_cache0 = download_bytes(pool_->v(0), native());
    if (with_norm) {
      kernels::qk_rms_norm(q1, k1, q_weight, k_weight, norm.eps, stream());
    }
    kernels::rope(q1, k1, fb.positions, cos_sin, stream());
    backend_->forward(0, q1, k1, v1, out1, fb);
    const std::vector<uint8_t> k_cache1 = download_bytes(pool_->k(0), native());
    const std::vector<uint8_t> v_cache1 = download_bytes(pool_->v(0), native());
    upload_bytes(k_cache0, pool_->k(0), native());
    upload_bytes(v_cache0, pool_->v(0), native());
    const bool fused = backend_->forward_with_rope(0, q2, k2, v2, fb.positions, cos_sin, out2, fb,
                                                   with_norm ? &norm : nullptr);
    if (with_norm && !fusable) {
      EXPECT_FALSE(fused) << what << ": a norm it cannot fold";
      return;
    }
    // Only the decode kernel (head_dim 64, 128, 256) stores FP8 itself.
    const bool flash_dim = s.head_dim == 64 || s.head_dim == 128 || s.head_dim == 256;
    if (fp8() && (mode != ForwardMode::kDecode || !flash_dim)) {
      EXPECT_FALSE(fused) << what << ": FP8 outside the decode kernel";
      continue;
    }
    ASSERT_TRUE(fused) << what;
    EXPECT_TRUE(download(out1, native()) == download(out2, native())) << what << ": output";
    EXPECT_TRUE(download_bytes(pool_->k(0), native()) == k_cache1) << what << ": K cache";
    EXPECT_TRUE(download_bytes(pool_->v(0), native()) == v_cache1) << what << ": V cache";
    if (mode == ForwardMode::kDecode) continue;  // the decode kernel rotates q in its tile only
    const std::vector<uint16_t> rows1 = download(qkv, native()),
                                rows2 = download(qkv_copy, native());
    for (int64_t t = 0; t < fb.num_tokens; ++t) {  // q rotated in place alike
      const int64_t width = qd + 2 * kd;
      EXPECT_TRUE(std::equal(rows1.begin() + t * width, rows1.begin() + t * width + qd,
                             rows2.begin() + t * width))
          << what << ": q of token " << t;
    }
  }
}

TEST_P(FlashAttentionTest, RopeFusedWithStoreMatchesRopeThenForward) { check_rope_fusion(false); }

TEST_P(FlashAttentionTest, QkNormFusedMatchesNormThenRope) { check_rope_fusion(true); }

std::vector<HeadShape> head_shapes() {
  std::vector<HeadShape> shapes;
  for (int dim : {8, 48, 64, 128, 256}) {
    for (int ratio : {1, 4, 8}) shapes.push_back({2 * ratio, 2, dim});
  }
  shapes.push_back({32, 8, 128});  // Llama-3-8B
  shapes.push_back({32, 1, 128});  // 32 q heads per KV head: decode takes the extend kernel
  shapes.push_back({28, 4, 128});  // Qwen2-7B: 7 q heads per KV head, rows straddle MMA tiles
  // FP8 caches: the flash kernels' dims (and 48, which the reference takes), GQA 1, 4 and 7.
  for (const DType kv : {DType::kF8E4M3, DType::kF8E5M2}) {
    for (int dim : {48, 64, 128, 256}) shapes.push_back({8, 2, dim, kv});
    shapes.push_back({2, 2, 128, kv});
    shapes.push_back({28, 4, 128, kv});
  }
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(Heads, FlashAttentionTest, ::testing::ValuesIn(head_shapes()),
                         [](const auto& info) {
                           const HeadShape& s = info.param;
                           return "d" + std::to_string(s.head_dim) + "_q" +
                                  std::to_string(s.q_heads) + "_kv" + std::to_string(s.kv_heads) +
                                  (s.kv == DType::kBF16 ? "" : "_" + std::string(dtype_name(s.kv)));
                         });

TEST(FlashAttentionRegistry, AutoPicksFlashOnCudaAndCudaRefStaysAvailable) {
  backend::CudaAllocator gpu(0);
  backend::CudaStream stream(0);
  KvPool pool(gpu, KvPoolShape{1, 16, 2, 64, DType::kBF16});
  const AttentionConfig config{4, 2, 64, 0.125f};
  auto chosen = create_attention_backend("auto", Device::cuda(0), config, pool, stream.get());
  ASSERT_TRUE(chosen.ok());
  EXPECT_NE(dynamic_cast<FlashAttentionBackend*>(chosen.value().get()), nullptr);
  auto ref = create_attention_backend("cuda_ref", Device::cuda(0), config, pool, stream.get());
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(dynamic_cast<FlashAttentionBackend*>(ref.value().get()), nullptr);
  // An f32 KV cache (--dtype float32) keeps the reference under "auto"; "flash" refuses it.
  KvPool f32_pool(gpu, KvPoolShape{1, 16, 2, 64, DType::kF32});
  auto f32_auto = create_attention_backend("auto", Device::cuda(0), config, f32_pool, stream.get());
  ASSERT_TRUE(f32_auto.ok());
  EXPECT_EQ(dynamic_cast<FlashAttentionBackend*>(f32_auto.value().get()), nullptr);
  EXPECT_FALSE(
      create_attention_backend("flash", Device::cuda(0), config, f32_pool, stream.get()).ok());
  // FP8 caches (--kv-cache-dtype) take the flash kernels under a bf16 model, the reference
  // under an f32 one (the flash kernels write bf16); "flash" refuses the latter.
  AttentionConfig f32_config = config;
  f32_config.dtype = DType::kF32;
  for (const DType kv : {DType::kF8E4M3, DType::kF8E5M2}) {
    KvPool fp8_pool(gpu, KvPoolShape{1, 16, 2, 64, kv});
    auto fp8_auto =
        create_attention_backend("auto", Device::cuda(0), config, fp8_pool, stream.get());
    ASSERT_TRUE(fp8_auto.ok());
    EXPECT_NE(dynamic_cast<FlashAttentionBackend*>(fp8_auto.value().get()), nullptr);
    auto f32_fp8 =
        create_attention_backend("auto", Device::cuda(0), f32_config, fp8_pool, stream.get());
    ASSERT_TRUE(f32_fp8.ok());
    EXPECT_EQ(dynamic_cast<FlashAttentionBackend*>(f32_fp8.value().get()), nullptr);
    EXPECT_FALSE(
        create_attention_backend("flash", Device::cuda(0), f32_config, fp8_pool, stream.get())
            .ok());
  }
}

}  // namespace
}  // namespace sgl::attention
