// A test fixture for the CUDA linear kernels (gemv.h, hopper_gemm.h): random bf16-exact host
// inputs, device copies, NaN-poisoned outputs, and error measures against the CPU linear.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_stream.h"
#include "core/buffer.h"
#include "core/half.h"
#include "device_copies.h"
#include "kernels/copy.h"
#include "kernels/linear.h"

namespace sgl::kernels::test {

class CudaLinearTest : public ::testing::Test {
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
  // silu(x gate^T) * (x up^T) for w = [gate; up]: [2 inter, k], rounded as the GPU paths
  // round: projections and silu to bf16.
  Buffer silu_mul_reference(const Tensor& x, const Tensor& w, int64_t inter) {
    const int64_t m = x.size(0);
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
    return want;
  }
};

}  // namespace sgl::kernels::test
