// The small-batch tensor-core linear (kernels/cuda/gemv.h) against the CPU linear: every token
// count it takes, awkward n and k, strided x, bias, bf16 and f32 outputs, and the fused
// gate/up + SiLU. Label: cuda.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_stream.h"
#include "core/buffer.h"
#include "core/half.h"
#include "device_copies.h"
#include "kernels/activation.h"
#include "kernels/copy.h"
#include "kernels/cuda/gemv.h"
#include "kernels/linear.h"

namespace sgl::kernels {
namespace {

class CudaGemv : public ::testing::Test {
 protected:
  backend::CudaAllocator gpu_{0};
  backend::CudaStream stream_{0};
  backend::Stream cpu_ = backend::Stream::cpu();
  std::mt19937 rng_{7};

  // Random host f32 values rounded to bf16, so both sides see the same inputs.
  Buffer host_random(std::initializer_list<int64_t> shape, float scale) {
    Buffer b(cpu_allocator(), DType::kF32, shape);
    std::normal_distribution<float> dist(0.f, scale);
    for (int64_t i = 0; i < b.tensor().numel(); ++i) {
      b.data<float>()[i] = bf16_to_float(float_to_bf16(dist(rng_)));
    }
    return b;
  }
  Buffer to_device(const Tensor& host) {
    return test::to_device_as(host, DType::kBF16, gpu_, stream_.get());
  }
  Buffer to_host(const Tensor& dev) { return test::to_host_f32(dev, stream_.get()); }
  // A device output poisoned with NaN, so an element the kernel skips fails the comparison.
  Buffer poisoned(DType dtype, std::initializer_list<int64_t> shape) {
    Buffer host(cpu_allocator(), DType::kF32, shape);
    for (int64_t i = 0; i < host.tensor().numel(); ++i) host.data<float>()[i] = NAN;
    Buffer staged(cpu_allocator(), dtype, shape);
    copy(host, staged, cpu_);
    Buffer dev(gpu_, dtype, shape);
    copy(staged, dev, stream_.get());
    return dev;
  }
  // |v| elementwise for a host f32 vector or matrix (rows may be strided), as a new buffer.
  static Buffer absolute(const Tensor& v) {
    Buffer out(cpu_allocator(), DType::kF32, v.shape());
    const int64_t cols = v.size(v.ndim() - 1), rows = v.numel() / cols;
    const int64_t stride = v.ndim() > 1 ? v.stride(0) : cols;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        out.data<float>()[r * cols + c] = std::abs(v.data<float>()[r * stride + c]);
      }
    }
    return out;
  }
  // max |got - want| / magnitude, elementwise.
  static double err_over_magnitude(const Tensor& got, const Tensor& want, const Tensor& magnitude) {
    double worst = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      const double g = got.data<float>()[i];
      if (!std::isfinite(g)) return INFINITY;
      worst = std::max(worst, std::abs(g - want.data<float>()[i]) /
                                  (double{magnitude.data<float>()[i]} + 1e-30));
    }
    return worst;
  }
  // max |a - b| / (max |b| over the row + tiny): robust to near-zero elements.
  static double rel_err(const Tensor& got, const Tensor& want) {
    const int64_t rows = want.size(0), cols = want.size(1);
    double worst = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double scale = 1e-6;
      for (int64_t c = 0; c < cols; ++c) {
        scale = std::max(scale, std::abs(double{want.data<float>()[r * cols + c]}));
      }
      for (int64_t c = 0; c < cols; ++c) {
        const double g = got.data<float>()[r * cols + c], w = want.data<float>()[r * cols + c];
        if (!std::isfinite(g)) return INFINITY;
        worst = std::max(worst, std::abs(g - w) / scale);
      }
    }
    return worst;
  }
};

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

TEST_F(CudaGemv, FusedGateUpSiluMatchesUnfusedOps) {
  for (int64_t m : {1, 5, 8, 11, 16}) {
    for (int64_t inter : {1, 24, 200}) {
      for (int64_t k : {192, 1288}) {  // 1288: a partial last stage after the ring wrapped
        Buffer x = host_random({m, k}, 1.f), w = host_random({2 * inter, k}, 0.2f);
        // The reference rounds as the GPU path does: projections and silu to bf16.
        Buffer gate_up(cpu_allocator(), DType::kF32, {m, 2 * inter});
        linear(x, w, Tensor(), gate_up, cpu_);
        Buffer want(cpu_allocator(), DType::kF32, {m, inter});
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t i = 0; i < inter; ++i) {
            const float g = bf16_to_float(float_to_bf16(gate_up.data<float>()[r * 2 * inter + i]));
            const float u =
                bf16_to_float(float_to_bf16(gate_up.data<float>()[r * 2 * inter + inter + i]));
            const float act = bf16_to_float(float_to_bf16(g / (1.f + std::exp(-g))));
            want.data<float>()[r * inter + i] = act * u;
          }
        }
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
