// The small-batch tensor-core linear (kernels/cuda/gemv.h) against the CPU linear: every token
// count it takes, awkward n and k, strided x, bias, bf16 and f32 outputs, and the fused
// gate/up + SiLU. Label: cuda.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cuda/cuda_runtime.h"
#include "core/half.h"
#include "cuda_linear_fixture.h"
#include "kernels/activation.h"
#include "kernels/cuda/gemv.h"
#include "kernels/linear.h"

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
