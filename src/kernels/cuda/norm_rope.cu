// CUDA RMSNorm (plain and fused residual add) and rotate-half RoPE.
#include "backend/cuda/cuda_check.h"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/dispatch.cuh"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/row_layout.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kNormThreads = 256;

// One block per row. `residual` (nullable; f32 or the activation dtype) gets x + residual, and
// the norm runs over it.
template <typename T, typename R = T>
__global__ void rms_norm_kernel(const T* x, RowLayout x_rows, T* out, RowLayout out_rows,
                                R* residual, const T* weight, float eps) {
  const int64_t row = blockIdx.x;
  const int64_t n = x_rows.row_len;
  const T* xr = x + x_rows.offset(row);
  T* orow = out + out_rows.offset(row);
  R* rr = residual ? residual + row * n : nullptr;
  float sum_sq = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float v = to_float(xr[i]);
    if (rr) {
      v += to_float(rr[i]);
      rr[i] = from_float<R>(v);
    }
    sum_sq += v * v;
  }
  const float inv = rsqrtf(block_sum(sum_sq) / static_cast<float>(n) + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = rr ? to_float(rr[i]) : to_float(xr[i]);
    // As transformers: normalize in f32, round to the activation dtype, then scale.
    const float normed = to_float(from_float<T>(v * inv));
    orow[i] = from_float<T>(to_float(weight[i]) * normed);
  }
}

template <typename T>
__global__ void rope_kernel(T* q, int64_t q_tok_stride, int64_t q_head_stride, int q_heads, T* k,
                            int64_t k_tok_stride, int64_t k_head_stride, int k_heads,
                            const int32_t* positions, const float* cos_sin, int head_dim) {
  const int64_t t = blockIdx.x;
  const int half = head_dim / 2;
  const float* cos = cos_sin + static_cast<int64_t>(positions[t]) * head_dim;
  const float* sin = cos + half;
  const int total = (q_heads + k_heads) * half;
  for (int idx = threadIdx.x; idx < total; idx += blockDim.x) {
    const int head = idx / half, i = idx % half;
    T* v = head < q_heads ? q + t * q_tok_stride + head * q_head_stride
                          : k + t * k_tok_stride + (head - q_heads) * k_head_stride;
    const float a = to_float(v[i]), b = to_float(v[i + half]);
    v[i] = from_float<T>(a * cos[i] - b * sin[i]);
    v[i + half] = from_float<T>(b * cos[i] + a * sin[i]);
  }
}

cudaStream_t native(backend::Stream s) { return static_cast<cudaStream_t>(s.native); }

}  // namespace

void rms_norm(const Tensor& x, const Tensor& weight, double eps, const Tensor& out,
              backend::Stream stream) {
  const RowLayout in_rows = row_layout(x), out_rows = row_layout(out);
  if (in_rows.num_rows == 0) return;
  SGL_DISPATCH_FLOAT(x.dtype(), T, {
    rms_norm_kernel<T><<<in_rows.num_rows, kNormThreads, 0, native(stream)>>>(
        static_cast<const T*>(x.raw()), in_rows, static_cast<T*>(out.raw()), out_rows,
        static_cast<T*>(nullptr), static_cast<const T*>(weight.raw()), static_cast<float>(eps));
  });
  SGL_CUDA_CHECK_LAUNCH();
}

void fused_add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& weight, double eps,
                        backend::Stream stream) {
  const RowLayout rows = row_layout(x);
  if (rows.num_rows == 0) return;
  SGL_DISPATCH_FLOAT(x.dtype(), T, {
    if (residual.dtype() == DType::kF32) {
      rms_norm_kernel<T, float><<<rows.num_rows, kNormThreads, 0, native(stream)>>>(
          static_cast<const T*>(x.raw()), rows, static_cast<T*>(x.raw()), rows,
          static_cast<float*>(residual.raw()), static_cast<const T*>(weight.raw()),
          static_cast<float>(eps));
    } else {
      rms_norm_kernel<T><<<rows.num_rows, kNormThreads, 0, native(stream)>>>(
          static_cast<const T*>(x.raw()), rows, static_cast<T*>(x.raw()), rows,
          static_cast<T*>(residual.raw()), static_cast<const T*>(weight.raw()),
          static_cast<float>(eps));
    }
  });
  SGL_CUDA_CHECK_LAUNCH();
}

void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& cos_sin,
          backend::Stream stream) {
  if (q.size(0) == 0) return;
  SGL_DISPATCH_FLOAT(q.dtype(), T, {
    rope_kernel<T><<<q.size(0), 128, 0, native(stream)>>>(
        static_cast<T*>(q.raw()), q.stride(0), q.stride(1), static_cast<int>(q.size(1)),
        static_cast<T*>(k.raw()), k.stride(0), k.stride(1), static_cast<int>(k.size(1)),
        positions.data<int32_t>(), cos_sin.data<float>(), static_cast<int>(q.size(2)));
  });
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace sgl::kernels::cuda
