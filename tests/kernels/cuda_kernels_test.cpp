// CUDA op parity sweeps against the CPU ops (f32 and bf16, awkward sizes). Label: cuda.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_graph.h"
#include "backend/cuda/cuda_stream.h"
#include "core/buffer.h"
#include "core/half.h"
#include "device_copies.h"
#include "kernels/activation.h"
#include "kernels/argmax.h"
#include "kernels/copy.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/stream_gemms.h"
#include "kernels/embedding.h"
#include "kernels/fill.h"
#include "kernels/gather.h"
#include "kernels/linear.h"
#include "kernels/lora.h"
#include "kernels/pooling.h"
#include "kernels/rms_norm.h"
#include "kernels/rope.h"

namespace sgl::kernels {
namespace {

class CudaKernels : public ::testing::TestWithParam<DType> {
 protected:
  backend::CudaAllocator gpu_{0};
  backend::CudaStream stream_{0};
  backend::Stream cpu_ = backend::Stream::cpu();
  std::mt19937 rng_{123};

  // Random f32 host values, rounded to the dtype under test so both sides see equal inputs.
  Buffer host_random(std::initializer_list<int64_t> shape, float scale = 1.f) {
    Buffer b(cpu_allocator(), DType::kF32, shape);
    std::normal_distribution<float> dist(0.f, scale);
    float* p = b.data<float>();
    for (int64_t i = 0; i < b.tensor().numel(); ++i) {
      p[i] = GetParam() == DType::kBF16 ? bf16_to_float(float_to_bf16(dist(rng_))) : dist(rng_);
    }
    return b;
  }
  // Device copy in the dtype under test.
  Buffer to_device(const Buffer& host) {
    return test::to_device_as(host, GetParam(), gpu_, stream_.get());
  }
  // Host f32 copy of a device tensor (any dtype).
  Buffer to_host(const Tensor& dev) { return test::to_host_f32(dev, stream_.get()); }
  double tol() const { return GetParam() == DType::kBF16 ? 2e-2 : 1e-4; }
  // max |a - b| / max(1, |b|)
  static double max_rel_err(const Tensor& a, const Tensor& b) {
    double err = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double x = a.data<float>()[i], y = b.data<float>()[i];
      if (std::isnan(x)) return INFINITY;
      err = std::max(err, std::abs(x - y) / std::max(1.0, std::abs(y)));
    }
    return err;
  }
};

TEST_P(CudaKernels, LinearSweep) {
  for (int64_t m : {1, 7, 257}) {
    for (int64_t n : {111, 1024}) {
      const int64_t k = 96;
      Buffer x = host_random({m, k}), w = host_random({n, k}, 0.1f), b = host_random({n});
      Buffer y_ref(cpu_allocator(), DType::kF32, {m, n});
      linear(x, w, b, y_ref, cpu_);
      Buffer dx = to_device(x), dw = to_device(w), db = to_device(b);
      Buffer dy(gpu_, GetParam(), {m, n});
      linear(dx, dw, db, dy, stream_.get());
      EXPECT_LT(max_rel_err(to_host(dy), y_ref), tol()) << m << "x" << n;
      Buffer dy32(gpu_, DType::kF32, {m, n});  // f32 output (the logits path)
      linear(dx, dw, Tensor(), dy32, stream_.get());
      Buffer y_nobias(cpu_allocator(), DType::kF32, {m, n});
      linear(x, w, Tensor(), y_nobias, cpu_);
      EXPECT_LT(max_rel_err(to_host(dy32), y_nobias), 1e-3) << m << "x" << n;
    }
  }
}

// The cuBLASLt path (kernels/cuda/cublaslt_gemm.h) on awkward shapes: with and without bias,
// x contiguous or a column window of wider rows (16-byte aligned, or at an odd element offset,
// which cuBLASLt may hand to the cublasGemmEx fallback), y in the dtype under test and in f32
// (where a bf16 bias cannot ride in the epilogue and is added apart).
TEST_P(CudaKernels, LinearCublasLtAwkwardShapes) {
  const auto& lt = cuda::StreamGemms::of(stream_.get()).library;
  std::vector<DType> outs = {GetParam()};
  if (GetParam() != DType::kF32) outs.push_back(DType::kF32);
  for (int64_t m : {1, 3, 17, 64, 300}) {
    for (int64_t n : {8, 72, 1000}) {
      for (int64_t k : {16, 136, 520}) {
        Buffer x = host_random({m, k}), w = host_random({n, k}, 0.1f), b = host_random({n});
        Buffer want(cpu_allocator(), DType::kF32, {m, n});
        Buffer want_bias(cpu_allocator(), DType::kF32, {m, n});
        linear(x, w, Tensor(), want, cpu_);
        linear(x, w, b, want_bias, cpu_);
        Buffer dw = to_device(w), db = to_device(b);
        for (int64_t offset : {0, 8, 3}) {
          // x as columns [offset, offset + k) of [m, width] rows; NaN elsewhere.
          const int64_t width = offset == 0 ? k : k + 24;
          Buffer wide(cpu_allocator(), DType::kF32, {m, width});
          for (int64_t r = 0; r < m; ++r) {
            for (int64_t c = 0; c < width; ++c) {
              wide.data<float>()[r * width + c] =
                  c >= offset && c < offset + k ? x.data<float>()[r * k + c - offset] : NAN;
            }
          }
          Buffer dwide = to_device(wide);
          const Tensor dx = dwide.tensor().slice_last(offset, k);
          for (DType out : outs) {
            for (bool with_bias : {false, true}) {
              const size_t fallbacks = lt.plans_without_algorithm();
              Buffer dy(gpu_, out, {m, n});
              cuda::linear_library(dx, dw, with_bias ? db.tensor() : Tensor(), dy, stream_.get());
              double bound = tol();  // bf16 out
              if (out == DType::kF32) bound = GetParam() == DType::kF32 ? 1e-4 : 1e-3;
              EXPECT_LT(max_rel_err(to_host(dy), with_bias ? want_bias : want), bound)
                  << m << "x" << n << "x" << k << " offset " << offset << " out " << dtype_name(out)
                  << (with_bias ? " bias" : "");
              if (offset != 3) {  // aligned: must run on cuBLASLt, not the fallback
                EXPECT_EQ(lt.plans_without_algorithm(), fallbacks)
                    << m << "x" << n << "x" << k << " offset " << offset;
              }
            }
          }
        }
      }
    }
  }
}

// One plan per shape: the same shape (same or fresh buffers) reuses it; bias or not, and
// another m, each make one more.
TEST_P(CudaKernels, LinearCublasLtCachesPlansPerShape) {
  const auto& lt = cuda::StreamGemms::of(stream_.get()).library;
  ASSERT_EQ(lt.cache_size(), 0u);
  const int64_t m = 17, n = 72, k = 136;
  Buffer x = host_random({m, k}), w = host_random({n, k}, 0.1f), b = host_random({n});
  Buffer dx = to_device(x), dw = to_device(w), db = to_device(b);
  Buffer dy(gpu_, GetParam(), {m, n}), dy2(gpu_, GetParam(), {m, n});
  cuda::linear_library(dx, dw, db, dy, stream_.get());
  EXPECT_EQ(lt.cache_size(), 1u);
  cuda::linear_library(dx, dw, db, dy, stream_.get());
  EXPECT_EQ(lt.cache_size(), 1u);
  cuda::linear_library(dx, dw, db, dy2,
                       stream_.get());  // fresh y: cudaMalloc's alignment, same plan
  EXPECT_EQ(lt.cache_size(), 1u);
  cuda::linear_library(dx, dw, Tensor(), dy2, stream_.get());
  EXPECT_EQ(lt.cache_size(), 2u);
  cuda::linear_library(dx.tensor().slice_rows(0, 3), dw, db, dy.tensor().slice_rows(0, 3),
                       stream_.get());
  EXPECT_EQ(lt.cache_size(), 3u);
  EXPECT_EQ(lt.plans_without_algorithm(), 0u);
  Buffer want(cpu_allocator(), DType::kF32, {m, n});
  linear(x, w, b, want, cpu_);
  EXPECT_LT(max_rel_err(to_host(dy), want), tol());
}

// A bounded cache: past max_plans shapes it starts over, and every call still computes right.
TEST_P(CudaKernels, LinearCublasLtPlanCacheStaysBounded) {
  const backend::Stream stream = stream_.get();
  cuda::CublasLtGemm lt(stream.workspace, stream.workspace_bytes, /*max_plans=*/3);
  const int64_t n = 72, k = 136;
  Buffer w = host_random({n, k}, 0.1f);
  Buffer dw = to_device(w);
  for (int64_t m = 1; m <= 8; ++m) {
    Buffer x = host_random({m, k});
    Buffer dx = to_device(x), dy(gpu_, GetParam(), {m, n});
    ASSERT_TRUE(lt.run(dx, dw, Tensor(), dy, stream));
    EXPECT_EQ(lt.cache_size(), static_cast<size_t>((m - 1) % 3 + 1)) << "m " << m;
    Buffer want(cpu_allocator(), DType::kF32, {m, n});
    linear(x, w, Tensor(), want, cpu_);
    EXPECT_LT(max_rel_err(to_host(dy), want), tol()) << "m " << m;
  }
}

// Captured into a CUDA graph and replayed: a shape planned by an eager call before capture,
// and one first met during capture (its plan is built then, on the host only).
TEST_P(CudaKernels, LinearCublasLtUnderGraphCapture) {
  const int64_t n = 72, k = 136;
  Buffer x = host_random({5, k}), w = host_random({n, k}, 0.1f), b = host_random({n});
  Buffer dx = to_device(x), dw = to_device(w), db = to_device(b);
  Buffer dy(gpu_, GetParam(), {5, n}), dy3(gpu_, GetParam(), {3, n});
  const Tensor dx3 = dx.tensor().slice_rows(0, 3);
  cuda::linear_library(dx, dw, db, dy, stream_.get());  // eager: plans [5, k] x [n, k] with bias
  backend::synchronize(stream_.get());
  zero(dy, stream_.get());
  const backend::CudaGraph graph = backend::CudaGraph::capture(stream_.get(), [&] {
    cuda::linear_library(dx, dw, db, dy, stream_.get());
    cuda::linear_library(dx3, dw, Tensor(), dy3, stream_.get());
  });
  graph.replay(stream_.get());
  Buffer want(cpu_allocator(), DType::kF32, {5, n}), want3(cpu_allocator(), DType::kF32, {3, n});
  linear(x, w, b, want, cpu_);
  linear(x.tensor().slice_rows(0, 3), w, Tensor(), want3, cpu_);
  EXPECT_LT(max_rel_err(to_host(dy), want), tol());
  EXPECT_LT(max_rel_err(to_host(dy3), want3), tol());
}

TEST_P(CudaKernels, RmsNormAndFusedAddSweep) {
  for (int64_t rows : {1, 7, 257}) {
    for (int64_t d : {64, 111, 4096}) {
      Buffer x = host_random({rows, d}), r = host_random({rows, d}), w = host_random({d});
      Buffer dx = to_device(x), dr = to_device(r), dw = to_device(w);
      Buffer dout(gpu_, GetParam(), {rows, d});
      rms_norm(dx, dw, 1e-6, dout, stream_.get());
      Buffer ref(cpu_allocator(), DType::kF32, {rows, d});
      rms_norm(x, w, 1e-6, ref, cpu_);
      EXPECT_LT(max_rel_err(to_host(dout), ref), tol()) << rows << "x" << d;
      fused_add_rms_norm(dx, dr, dw, 1e-6, stream_.get());
      fused_add_rms_norm(x, r, w, 1e-6, cpu_);
      EXPECT_LT(max_rel_err(to_host(dx), x), 4 * tol()) << rows << "x" << d;
      EXPECT_LT(max_rel_err(to_host(dr), r), tol()) << rows << "x" << d;
    }
  }
}

// The model's layout: activations in the dtype under test, the residual stream in f32.
TEST_P(CudaKernels, FusedAddRmsNormWithF32Residual) {
  for (int64_t rows : {1, 7, 257}) {
    for (int64_t d : {64, 4096}) {
      Buffer x = host_random({rows, d}), r = host_random({rows, d}), w = host_random({d});
      Buffer dx = to_device(x), dw = to_device(w);
      Buffer dr(gpu_, DType::kF32, {rows, d});
      copy(r, dr, stream_.get());
      fused_add_rms_norm(dx, dr, dw, 1e-6, stream_.get());
      fused_add_rms_norm(x, r, w, 1e-6, cpu_);
      EXPECT_LT(max_rel_err(to_host(dx), x), 4 * tol()) << rows << "x" << d;
      EXPECT_LT(max_rel_err(to_host(dr), r), 1e-6) << rows << "x" << d;  // the sum stays f32
    }
  }
}

// Qwen3's q/k head norms in one launch, on split_heads views of a qkv buffer (v untouched), over
// head sizes of the warp kernel's three widths, a partial lane row and the block-kernel fallback.
TEST_P(CudaKernels, QkRmsNormOnStridedQkv) {
  for (const int64_t d : {40, 64, 128, 200, 320}) {
    for (const int64_t t : {1, 7, 33}) {
      const int64_t hq = 4, hk = 2, width = (hq + 2 * hk) * d;
      Buffer qkv = host_random({t, width}), wq = host_random({d}), wk = host_random({d});
      Buffer dqkv = to_device(qkv), dwq = to_device(wq), dwk = to_device(wk);
      auto views = [&](const Tensor& all) {
        return std::pair(all.slice_last(0, hq * d).split_heads(hq),
                         all.slice_last(hq * d, hk * d).split_heads(hk));
      };
      auto [q, k] = views(qkv.tensor());
      rms_norm(q, wq, 1e-6, q, cpu_);
      rms_norm(k, wk, 1e-6, k, cpu_);
      auto [dq, dk] = views(dqkv.tensor());
      qk_rms_norm(dq, dk, dwq, dwk, 1e-6, stream_.get());
      EXPECT_LT(max_rel_err(to_host(dqkv), qkv), tol()) << "t=" << t << " d=" << d;
    }
  }
}

// Dummy weights: the GPU fill produces exactly the CPU fill's values.
TEST_P(CudaKernels, FillUniformMatchesCpu) {
  for (int64_t n : {1, 1000, 1 << 20}) {
    Buffer host(cpu_allocator(), GetParam(), {n});
    fill_uniform(host, -0.5f, 0.25f, 77, cpu_);
    Buffer dev(gpu_, GetParam(), {n});
    fill_uniform(dev, -0.5f, 0.25f, 77, stream_.get());
    Buffer a = to_host(dev), b(cpu_allocator(), DType::kF32, {n});
    copy(host, b, cpu_);
    EXPECT_EQ(max_rel_err(a, b), 0.0) << n;
  }
  Buffer ones(gpu_, GetParam(), {4097});
  fill_constant(ones, 1.f, stream_.get());
  Buffer h = to_host(ones);
  for (int64_t i = 0; i < 4097; ++i) ASSERT_EQ(h.data<float>()[i], 1.f);
}

// Weights converted where they land equal the host conversion bit for bit, from every stored
// format, at sizes that are not multiples of the grid and from an unaligned source.
TEST_P(CudaKernels, RopeOnStridedQkv) {
  const int64_t t = 7, hq = 4, hk = 2, d = 64, max_pos = 64, width = (hq + 2 * hk) * d;
  Buffer qkv = host_random({t, width});
  Buffer table(cpu_allocator(), DType::kF32, {max_pos, d});
  for (int64_t p = 0; p < max_pos; ++p) {
    for (int64_t i = 0; i < d / 2; ++i) {
      table.data<float>()[p * d + i] = std::cos(p * std::pow(10000.0, -2.0 * i / d));
      table.data<float>()[p * d + d / 2 + i] = std::sin(p * std::pow(10000.0, -2.0 * i / d));
    }
  }
  std::vector<int32_t> pos = {0, 3, 9, 63, 1, 2, 40};
  Tensor pos_host(pos.data(), DType::kI32, {t});
  Buffer pos_dev(gpu_, DType::kI32, {t});
  copy(pos_host, pos_dev, stream_.get());
  Buffer table_dev(gpu_, DType::kF32, {max_pos, d});
  copy(table, table_dev, stream_.get());
  Buffer dqkv = to_device(qkv);
  auto views = [&](const Tensor& all) {
    return std::pair(all.slice_last(0, hq * d).split_heads(hq),
                     all.slice_last(hq * d, hk * d).split_heads(hk));
  };
  auto [q, k] = views(qkv.tensor());
  rope(q, k, pos_host, table, cpu_);
  auto [dq, dk] = views(dqkv.tensor());
  rope(dq, dk, pos_dev, table_dev, stream_.get());
  EXPECT_LT(max_rel_err(to_host(dqkv), qkv), tol());
}

TEST_P(CudaKernels, SiluEmbeddingGather) {
  for (int64_t rows : {1, 7, 257}) {
    for (int64_t inter : {111, 2056}) {  // 2056: the bf16 16-byte path, a partial last block
      Buffer gu = host_random({rows, 2 * inter});
      Buffer out(cpu_allocator(), DType::kF32, {rows, inter});
      silu_and_mul(gu, out, cpu_);
      Buffer dgu = to_device(gu);
      Buffer dout(gpu_, GetParam(), {rows, inter});
      silu_and_mul(dgu, dout, stream_.get());
      EXPECT_LT(max_rel_err(to_host(dout), out), tol()) << rows << "x" << inter;
    }
  }
  const int64_t vocab = 32000, h = 72;
  Buffer table = host_random({vocab, h});
  std::vector<int32_t> ids = {0, 31999, 5, 5, 17000};
  std::vector<int32_t> indptr = {0, 2, 3, 5};
  Buffer ids_dev(gpu_, DType::kI32, {5}), indptr_dev(gpu_, DType::kI32, {4});
  copy(Tensor(ids.data(), DType::kI32, {5}), ids_dev, stream_.get());
  copy(Tensor(indptr.data(), DType::kI32, {4}), indptr_dev, stream_.get());
  Buffer dtable = to_device(table);
  Buffer demb(gpu_, GetParam(), {5, h}), dlast(gpu_, GetParam(), {3, h});
  embedding(ids_dev, dtable, demb, stream_.get());
  gather_last_tokens(demb, indptr_dev, dlast, stream_.get());
  Buffer emb(cpu_allocator(), DType::kF32, {5, h}), last(cpu_allocator(), DType::kF32, {3, h});
  embedding(Tensor(ids.data(), DType::kI32, {5}), table, emb, cpu_);
  gather_last_tokens(emb, Tensor(indptr.data(), DType::kI32, {4}), last, cpu_);
  EXPECT_EQ(max_rel_err(to_host(demb), emb), 0.0);
  EXPECT_EQ(max_rel_err(to_host(dlast), last), 0.0);
  // scatter_rows: rows into a larger table (72 wide: the 16-byte path; 3: the byte path), the
  // same on both devices; rows it does not name keep their values.
  for (const int64_t width : {h, int64_t{3}}) {
    Buffer src = host_random({5, width}), dst = host_random({9, width});
    std::vector<int32_t> rows = {8, 0, 3, 4, 6};
    Buffer rows_dev(gpu_, DType::kI32, {5});
    copy(Tensor(rows.data(), DType::kI32, {5}), rows_dev, stream_.get());
    Buffer dsrc = to_device(src), ddst = to_device(dst);
    scatter_rows(dsrc, rows_dev, ddst, stream_.get());
    scatter_rows(src, Tensor(rows.data(), DType::kI32, {5}), dst, cpu_);
    EXPECT_EQ(max_rel_err(to_host(ddst), dst), 0.0) << "width " << width;
  }
}

TEST_P(CudaKernels, PoolRowsSweep) {
  // Requests of 1, 7 and 257 rows (more rows than a block's row groups, and fewer); hidden sizes
  // with a partial 32-column tile.
  const std::vector<int32_t> indptr = {0, 1, 8, 265};
  const int64_t rows = indptr.back(), bs = 3;
  Buffer indptr_dev(gpu_, DType::kI32, {bs + 1});
  copy(Tensor(const_cast<int32_t*>(indptr.data()), DType::kI32, {bs + 1}), indptr_dev,
       stream_.get());
  const Tensor indptr_host(const_cast<int32_t*>(indptr.data()), DType::kI32, {bs + 1});
  for (int64_t h : {72, 1024}) {
    for (RowPool pool : {RowPool::kLast, RowPool::kSum}) {
      Buffer src = host_random({rows, h});
      Buffer expected(cpu_allocator(), DType::kF32, {bs, h});
      pool_rows(src, indptr_host, pool, expected, cpu_);
      Buffer dsrc = to_device(src);
      Buffer dout(gpu_, DType::kF32, {bs, h});
      pool_rows(dsrc, indptr_dev, pool, dout, stream_.get());
      // f32 sums in another order: 1e-4 relative to the sum's size whatever the input dtype.
      EXPECT_LE(max_rel_err(to_host(dout), expected), pool == RowPool::kLast ? 0.0 : 1e-4)
          << h << (pool == RowPool::kLast ? " last" : " sum");
    }
  }
}

// LoRA's update against the CPU's (f32 on the host) into a column range of a wider output: token
// counts around the 8-row tile, ranks 1 to 64, widths that are not multiples of 32 or 256; the
// columns outside the range stay as they were.
TEST_P(CudaKernels, AddLoraSweep) {
  const float scaling = 0.75f;
  for (const int64_t t : {1, 7, 8, 33, 300}) {
    for (const auto& [k, r, n] : {std::tuple<int64_t, int64_t, int64_t>{64, 1, 72},
                                  {72, 8, 1024},
                                  {4096, 16, 300},
                                  {1000, 64, 4096}}) {
      const int64_t wide = n + 40, col = 24;  // y is columns [col, col + n) of a wider output
      Buffer x = host_random({t, k}), y = host_random({t, wide});
      Buffer a = host_random({r, k}, 0.1f), b = host_random({n, r}, 0.1f);
      Buffer want(cpu_allocator(), DType::kF32, {t, wide}),
          shrunk(cpu_allocator(), DType::kF32, {t, r});
      copy(y, want, cpu_);
      add_lora(x, a, b, scaling, shrunk, want.tensor().slice_last(col, n), cpu_);
      Buffer dx = to_device(x), dy = to_device(y);
      Buffer da = test::to_device_as(a, DType::kF32, gpu_, stream_.get());
      Buffer db = test::to_device_as(b, DType::kF32, gpu_, stream_.get());
      Buffer dshrunk(gpu_, DType::kF32, {t, r});
      add_lora(dx, da, db, scaling, dshrunk, dy.tensor().slice_last(col, n), stream_.get());
      const Buffer got = to_host(dy);
      const std::string where = std::to_string(t) + "x" + std::to_string(k) + " r" +
                                std::to_string(r) + " n" + std::to_string(n);
      double err = 0;
      int64_t changed = 0;  // columns outside the range that differ from y
      for (int64_t i = 0; i < t * wide; ++i) {
        const int64_t c = i % wide;
        const double g = got.data<float>()[i], w = want.data<float>()[i];
        if (c >= col && c < col + n) {
          err = std::max(err,
                         std::isnan(g) ? INFINITY : std::abs(g - w) / std::max(1.0, std::abs(w)));
        } else if (g != y.data<float>()[i]) {
          ++changed;
        }
      }
      EXPECT_LT(err, tol()) << where;
      EXPECT_EQ(changed, 0) << where;
    }
  }
}

// Greedy ids on the GPU equal the CPU loop's: random rows with planted ties (the first wins),
// NaN and -inf, a strided view, vocabularies from 1 to the Llama-3 size.
TEST(CudaArgmax, MatchesTheCpuRowsIncludingTiesAndNaN) {
  backend::CudaAllocator gpu(0);
  backend::CudaStream stream(0);
  std::mt19937 rng(7);
  for (const int64_t vocab : {1, 7, 256, 16384, 128256}) {
    for (const int64_t rows : {1, 3, 64, 300}) {
      const int64_t stride = vocab + 5;
      std::vector<float> host(static_cast<size_t>(rows * stride));
      std::normal_distribution<float> dist(0.f, 3.f);
      for (float& x : host) x = dist(rng);
      for (int64_t r = 0; r < rows; ++r) {
        float* row = host.data() + r * stride;
        const auto at = [&](uint32_t k) { return static_cast<int64_t>(k % vocab); };
        switch (r % 4) {
          case 0:  // the maximum twice
            row[at(rng())] = 50.f;
            row[at(rng())] = 50.f;
            break;
          case 1:  // NaN beside the maximum
            row[at(rng())] = NAN;
            row[at(rng())] = 40.f;
            break;
          case 2:  // every value -inf but one NaN
            std::fill(row, row + vocab, -INFINITY);
            row[at(rng())] = NAN;
            break;
          default:
            break;
        }
        row[vocab] = 1e9f;  // past the row's end: never read
      }
      const Tensor cpu_logits =
          Tensor(host.data(), DType::kF32, {rows, stride}).slice_last(0, vocab);
      std::vector<int32_t> want(static_cast<size_t>(rows));
      argmax_rows(cpu_logits, Tensor(want.data(), DType::kI32, {rows}), backend::Stream::cpu());

      Buffer logits(gpu, DType::kF32, {rows, stride});
      copy(Tensor(host.data(), DType::kF32, {rows, stride}), logits, stream.get());
      Buffer ids(gpu, DType::kI32, {rows});
      argmax_rows(logits.tensor().slice_last(0, vocab), ids, stream.get());
      std::vector<int32_t> got(static_cast<size_t>(rows));
      copy(ids, Tensor(got.data(), DType::kI32, {rows}), stream.get());
      EXPECT_EQ(got, want) << "vocab " << vocab << ", " << rows << " rows";
      // Through an id map: map[i] = 3 i + 1.
      std::vector<int32_t> map(static_cast<size_t>(vocab));
      for (int32_t i = 0; i < vocab; ++i) map[static_cast<size_t>(i)] = 3 * i + 1;
      Buffer dmap(gpu, DType::kI32, {vocab});
      copy(Tensor(map.data(), DType::kI32, {vocab}), dmap, stream.get());
      argmax_rows(logits.tensor().slice_last(0, vocab), ids, stream.get(), dmap);
      copy(ids, Tensor(got.data(), DType::kI32, {rows}), stream.get());
      for (int32_t& id : want) id = 3 * id + 1;
      EXPECT_EQ(got, want) << "mapped, vocab " << vocab << ", " << rows << " rows";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaKernels, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace sgl::kernels
