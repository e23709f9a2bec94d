// The small-batch tensor-core linear (kernels/cuda/gemv.h) against the CPU linear: every token
// count it takes, awkward n and k, strided x, bias, bf16 and f32 outputs, and the fused
// gate/up + SiLU. Label: cuda.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "backend/cuda/cuda_runtime.h"
#include "core/half.h"
#include "cuda_linear_fixture.h"
#include "kernels/activation.h"
#include "kernels/cuda/gemv.h"
#include "kernels/linear.h"
#include "kernels/norm_linear.h"
#include "kernels/rms_norm.h"

namespace sgl::kernels {
namespace {

using CudaGemv = test::CudaLinearTest;

TEST_F(CudaGemv, MatchesCpuLinearOverShapes) {
  for (int64_t m : {1, 2, 3, 8, 9, 16}) {
    for (int64_t n : {1, 15, 72, 1000}) {
      // 1032 and 4104: a partial last stage; 4104: more stages than the bulk ring holds.
      for (int64_t k : {8, 56, 64, 136, 1032, 4104}) {
        // x lives in the first k columns of a wider buffer (the strided case).
        const int64_t x_cols = k + 8;
        Buffer x_wide = host_random({m, x_cols}, 1.f);
        Buffer w = host_random({n, k}, 0.1f), bias = host_random({n}, 1.f);
        const Tensor x = x_wide.tensor().slice_last(0, k);
        Buffer want(cpu_allocator(), DType::kF32, {m, n});
        linear(x, w, bias, want, cpu_);

        Buffer dx = to_device(x_wide), dw = to_device(w), db = to_device(bias);
        const Tensor dx_view = dx.tensor().slice_last(0, k);
        ASSERT_TRUE(cuda::gemv_applies(dx_view, dw));
        Buffer y32 = poisoned(DType::kF32, {m, n});
        cuda::gemv(dx_view, dw, db, y32, stream_.get());
        // f32 out: only the summation order differs, so the error is measured against the
        // sum of |terms| (a near-cancelling dot product would make any relative test flaky).
        Buffer magnitude(cpu_allocator(), DType::kF32, {m, n});
        linear(absolute(x), absolute(w), absolute(bias), magnitude, cpu_);
        EXPECT_LT(err_over_magnitude(to_host(y32), want, magnitude), 1e-5)
            << m << "x" << n << "x" << k << " f32";
        Buffer y16 = poisoned(DType::kBF16, {m, n});
        cuda::gemv(dx_view, dw, Tensor(), y16, stream_.get());
        Buffer want_nobias(cpu_allocator(), DType::kF32, {m, n});
        linear(x, w, Tensor(), want_nobias, cpu_);
        EXPECT_LT(rel_err(to_host(y16), want_nobias), 1e-2) << m << "x" << n << "x" << k;
      }
    }
  }
}

// A grid of 1..1.5 waves at two blocks per SM runs at three blocks per SM (up to 8 tokens;
// 9..16 keep two): n chosen from this GPU's SM count so that both sides run.
TEST_F(CudaGemv, ThreeBlocksPerSmGridMatchesCpuLinear) {
  const int64_t sms = backend::cuda::multiprocessor_count(0);
  const int64_t n = 16 * (2 * sms + sms / 2) - 5;  // a partial last block
  for (int64_t m : {1, 8, 9}) {
    for (int64_t k : {64, 4104}) {
      Buffer x = host_random({m, k}, 1.f), w = host_random({n, k}, 0.1f);
      Buffer want(cpu_allocator(), DType::kF32, {m, n});
      linear(x, w, Tensor(), want, cpu_);
      Buffer dx = to_device(x), dw = to_device(w);
      Buffer y = poisoned(DType::kBF16, {m, n});
      cuda::gemv(dx, dw, Tensor(), y, stream_.get());
      EXPECT_LT(rel_err(to_host(y), want), 1e-2) << m << "x" << n << "x" << k;
    }
  }
}

TEST_F(CudaGemv, FusedGateUpSiluMatchesUnfusedOps) {
  for (int64_t m : {1, 5, 8, 11, 16}) {
    for (int64_t inter : {1, 24, 200}) {
      for (int64_t k : {192, 1288}) {  // 1288: a partial last stage after the ring wrapped
        Buffer x = host_random({m, k}, 1.f), w = host_random({2 * inter, k}, 0.2f);
        Buffer want = silu_mul_reference(x, w, inter);
        Buffer dx = to_device(x), dw = to_device(w);
        Buffer scratch(gpu_, DType::kBF16, {m, 2 * inter});
        Buffer out = poisoned(DType::kBF16, {m, inter});
        linear_silu_and_mul(dx, dw, scratch, out, stream_.get());
        EXPECT_LT(rel_err(to_host(out), want), 2e-2) << m << "x" << inter << "x" << k;
      }
    }
  }
}

// Host f32 copies of two device tensors hold the same bits (bf16 and f32 widen exactly).
void expect_same_bits(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.numel(), want.numel()) << what;
  int64_t differ = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    differ += std::memcmp(&got.data<float>()[i], &want.data<float>()[i], sizeof(float)) != 0;
  }
  EXPECT_EQ(differ, 0) << what << ": " << differ << " of " << want.numel() << " values differ";
}

// The residual add + RMSNorm folded into the GEMV (norm_linear.h) against fused_add_rms_norm
// and then the GEMV: the projection, the residual sums and the normed rows bit for bit, for 1 to
// 8 rows of widths from one chunk to the fold's limits, contiguous and strided x, grids of one
// block to three blocks an SM, bf16 and f32 outputs, a bias, and the gate/up + SiLU projection.
TEST_F(CudaGemv, FoldedNormMatchesNormThenGemvBitForBit) {
  const int64_t sms = backend::cuda::multiprocessor_count(0);
  // Rows of 1 to 8 tokens of 1 to 8 warps: a warp per row for 5 or more rows of up to 768
  // values (3 warps of the norm kernel's: 576, 768; 2: 264; 1: 8, 64); else as many as
  // kGemvFoldNormMaxValues allows: one pass of rows (4 x 264), two full passes (4 x 576), a
  // second pass of one row (3 x 576), idle warps (2 x 1152).
  for (int64_t h : {8, 64, 264, 576, 768, 776, 1000, 1152, 2048}) {
    for (int64_t m = 1; m <= kNormFoldMaxRows; ++m) {
      const bool warp_rows =
          m >= cuda::kGemvFoldNormWarpRowMinRows && h <= cuda::kGemvFoldNormWarpRowMaxWidth;
      if (m * h > cuda::kGemvFoldNormMaxValues && !warp_rows) continue;
      // Grids of 1 block, 5, two an SM (gate/up: one an SM), and the most one wave holds with a
      // partial block: 2.5 an SM (three an SM), or two for a warp per row.
      const int64_t widest = warp_rows ? 16 * 2 * sms - 5 : 16 * (2 * sms + sms / 2) - 5;
      for (int64_t n : {int64_t{1}, int64_t{72}, 16 * 2 * sms, widest}) {
        const std::string shape =
            std::to_string(m) + " x " + std::to_string(h) + " -> " + std::to_string(n);
        // x: the first h columns of wider rows for the 72-row grids (the strided case).
        const int64_t x_cols = n == 72 ? h + 8 : h;
        Buffer x_wide = host_random({m, x_cols}, 1.f), norm_w = host_random({h}, 1.f);
        Buffer x(cpu_allocator(), DType::kF32, {m, h});
        for (int64_t i = 0; i < m * h; ++i) {
          x.data<float>()[i] = x_wide.data<float>()[i / h * x_cols + i % h];
        }
        Buffer w = host_random({n, h}, 0.1f), bias = host_random({n}, 1.f);
        // A residual of values from 2^-6 to 2^6 times each other: sums of squares whose order
        // shows in the bits.
        Buffer residual(cpu_allocator(), DType::kF32, {m, h});
        std::normal_distribution<float> dist(0.f, 3.f);
        std::uniform_int_distribution<int> exponent(-6, 6);
        for (int64_t i = 0; i < m * h; ++i) {
          residual.data<float>()[i] = std::ldexp(dist(rng_), exponent(rng_));
        }
        Buffer dw = to_device(w), db = to_device(bias), dnorm = to_device(norm_w);

        // The unfused ops: the norm in place, then the GEMV.
        Buffer ref_x = to_device(x);
        Buffer ref_r = test::to_device_as(residual, DType::kF32, gpu_, stream_.get());
        fused_add_rms_norm(ref_x, ref_r, dnorm, 1e-6, stream_.get());
        for (DType y_dtype : {DType::kBF16, DType::kF32}) {
          const bool with_bias = y_dtype == DType::kBF16;
          Buffer want(gpu_, y_dtype, {m, n});
          linear(ref_x, dw, with_bias ? db.tensor() : Tensor(), want, stream_.get());

          Buffer dx_wide = to_device(x_wide);
          const Tensor dx = dx_wide.tensor().slice_last(0, h);
          Buffer r_in = test::to_device_as(residual, DType::kF32, gpu_, stream_.get());
          Buffer r_out = poisoned(DType::kF32, {m, h}), normed = poisoned(DType::kBF16, {m, h});
          const ResidualRmsNorm norm{r_in, r_out, dnorm, 1e-6};
          ASSERT_TRUE(norm_folds_into_linear(dx, norm, dw, FoldedProjection::kLinear)) << shape;
          Buffer y = poisoned(y_dtype, {m, n});
          add_rms_norm_linear(dx, norm, dw, with_bias ? db.tensor() : Tensor(), y, normed,
                              stream_.get());
          expect_same_bits(to_host(y), to_host(want), shape + " y");
          expect_same_bits(to_host(r_out), to_host(ref_r), shape + " residual");
          expect_same_bits(to_host(normed), to_host(ref_x), shape + " normed row");
          expect_same_bits(to_host(r_in), residual, shape + " residual_in untouched");
        }
        if (n % 2 != 0) continue;
        const int64_t inter = n / 2;
        Buffer want_act(gpu_, DType::kBF16, {m, inter}), scratch(gpu_, DType::kBF16, {m, n});
        linear_silu_and_mul(ref_x, dw, scratch, want_act, stream_.get());
        Buffer dx_wide = to_device(x_wide);
        const Tensor dx = dx_wide.tensor().slice_last(0, h);
        Buffer r_in = test::to_device_as(residual, DType::kF32, gpu_, stream_.get());
        Buffer r_out = poisoned(DType::kF32, {m, h}), act = poisoned(DType::kBF16, {m, inter});
        add_rms_norm_linear_silu_and_mul(dx, {r_in, r_out, dnorm, 1e-6}, dw, act, stream_.get());
        expect_same_bits(to_host(act), to_host(want_act), shape + " silu");
        expect_same_bits(to_host(r_out), to_host(ref_r), shape + " silu residual");
      }
    }
  }
}

TEST_F(CudaGemv, FoldedNormDeclinesWhatItCannotTake) {
  const int64_t sms = backend::cuda::multiprocessor_count(0);
  constexpr auto kLinear = FoldedProjection::kLinear, kSilu = FoldedProjection::kSiluAndMul;
  auto folds = [&](int64_t rows, int64_t h, DType x_dtype, bool same_residual, int64_t n,
                   FoldedProjection kind) {
    Buffer x(gpu_, x_dtype, {rows, h}), w(gpu_, x_dtype, {n, h}), weight(gpu_, x_dtype, {h});
    Buffer r_in(gpu_, DType::kF32, {rows, h}), r_out(gpu_, DType::kF32, {rows, h});
    return norm_folds_into_linear(x, {r_in, same_residual ? r_in : r_out, weight, 1e-6}, w, kind);
  };
  EXPECT_TRUE(folds(1, 2048, DType::kBF16, false, 32, kLinear));
  EXPECT_TRUE(folds(1, 2048, DType::kBF16, false, 32, kSilu));
  EXPECT_TRUE(folds(4, 576, DType::kBF16, false, 32, kLinear));
  EXPECT_TRUE(folds(8, 288, DType::kBF16, false, 32, kSilu));
  EXPECT_TRUE(folds(8, 768, DType::kBF16, false, 32, kLinear));    // a warp per row
  EXPECT_FALSE(folds(3, 776, DType::kBF16, false, 32, kLinear));   // over kGemvFoldNormMaxValues
  EXPECT_FALSE(folds(2, 2048, DType::kBF16, false, 32, kLinear));  // the same
  EXPECT_FALSE(folds(9, 64, DType::kBF16, false, 32, kLinear));    // over kNormFoldMaxRows
  {  // residual rows that are not x's: one more, or strided
    Buffer x(gpu_, DType::kBF16, {2, 64}), w(gpu_, DType::kBF16, {32, 64});
    Buffer weight(gpu_, DType::kBF16, {64}), r_out(gpu_, DType::kF32, {2, 64});
    Buffer r3(gpu_, DType::kF32, {3, 64}), r_wide(gpu_, DType::kF32, {2, 72});
    EXPECT_TRUE(
        norm_folds_into_linear(x, {r3.tensor().slice_rows(0, 2), r_out, weight, 1e-6}, w, kLinear));
    EXPECT_FALSE(norm_folds_into_linear(x, {r3, r_out, weight, 1e-6}, w, kLinear));
    EXPECT_FALSE(norm_folds_into_linear(x, {r_wide.tensor().slice_last(0, 64), r_out, weight, 1e-6},
                                        w, kLinear));
  }
  EXPECT_FALSE(folds(1, 2056, DType::kBF16, false, 32, kLinear));  // over a thread per 8 values
  EXPECT_FALSE(folds(1, 60, DType::kBF16, false, 32, kLinear));    // h % 8 != 0
  EXPECT_FALSE(folds(1, 2048, DType::kF32, false, 32, kLinear));   // f32: the norm and cuBLAS
  EXPECT_FALSE(folds(1, 2048, DType::kBF16, true, 32, kLinear));   // the sum would race the reads
  {                                                                // w's rows not as wide as x
    Buffer x(gpu_, DType::kBF16, {1, 64}), w(gpu_, DType::kBF16, {32, 128});
    Buffer weight(gpu_, DType::kBF16, {64});
    Buffer r_in(gpu_, DType::kF32, {1, 64}), r_out(gpu_, DType::kF32, {1, 64});
    EXPECT_FALSE(norm_folds_into_linear(x, {r_in, r_out, weight, 1e-6}, w, kLinear));
  }
  // One wave of blocks (16 rows each): three an SM for a linear, two for gate/up and for a linear
  // that folds a warp per row.
  EXPECT_TRUE(folds(1, 64, DType::kBF16, false, 16 * 3 * sms, kLinear));
  EXPECT_FALSE(folds(1, 64, DType::kBF16, false, 16 * (3 * sms + 1), kLinear));
  EXPECT_TRUE(folds(5, 64, DType::kBF16, false, 16 * 2 * sms, kLinear));
  EXPECT_FALSE(folds(5, 64, DType::kBF16, false, 16 * (2 * sms + 1), kLinear));
  EXPECT_TRUE(folds(1, 64, DType::kBF16, false, 2 * 16 * 2 * sms, kSilu));
  EXPECT_FALSE(folds(1, 64, DType::kBF16, false, 2 * 16 * (2 * sms + 1), kSilu));
  Buffer x(cpu_allocator(), DType::kBF16, {1, 64}), w(cpu_allocator(), DType::kBF16, {8, 64});
  Buffer weight(cpu_allocator(), DType::kBF16, {64});
  Buffer r_in(cpu_allocator(), DType::kF32, {1, 64}), r_out(cpu_allocator(), DType::kF32, {1, 64});
  EXPECT_FALSE(norm_folds_into_linear(x, {r_in, r_out, weight, 1e-6}, w, kLinear));  // the CPU
}

TEST_F(CudaGemv, DeclinesWhatItCannotTake) {
  Buffer w(gpu_, DType::kBF16, {32, 64});
  Buffer x17(gpu_, DType::kBF16, {17, 64});
  EXPECT_FALSE(cuda::gemv_applies(x17, w));  // too many tokens: cuBLAS's job
  Buffer w_odd(gpu_, DType::kBF16, {32, 60});
  Buffer x_odd(gpu_, DType::kBF16, {4, 60});
  EXPECT_FALSE(cuda::gemv_applies(x_odd, w_odd));  // k % 8 != 0
  Buffer w32(gpu_, DType::kF32, {32, 64});
  Buffer x32(gpu_, DType::kF32, {4, 64});
  EXPECT_FALSE(cuda::gemv_applies(x32, w32));  // f32 runs through cuBLAS
}

}  // namespace
}  // namespace sgl::kernels
