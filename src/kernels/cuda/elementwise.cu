// CUDA embedding lookup, SiLU-and-mul, last-token gather,
// bias add, and raw copies.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "core/alignment.h"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/dispatch.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/cuda_copy.h"
#include "kernels/cuda/cuda_embedding_shard.h"
#include "kernels/cuda/cuda_ops.h"

namespace sgl::kernels::cuda {
namespace {

// One block per output row, copied in words of Word (16 bytes when rows and bases allow). The
// byte-wise form before moved one byte per load with every load behind the previous store
// (char pointers may alias): slow alone, though inside the decode graph it overlapped other
// work and the step did not change (docs/perf-log/cuda-session-10.md).
template <typename Word>
__global__ void gather_rows_kernel(const Word* __restrict__ src, Word* __restrict__ dst,
                                   const int32_t* row_of, int64_t row_words, int64_t num_src_rows,
                                   bool last_of_indptr) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t b = blockIdx.x;
  const int64_t r = last_of_indptr ? row_of[b + 1] - 1 : row_of[b];
  if (r < 0 || r >= num_src_rows) __trap();  // out-of-range id: a bug upstream
  const Word* s = src + r * row_words;
  Word* d = dst + b * row_words;
  for (int64_t i = threadIdx.x; i < row_words; i += blockDim.x) d[i] = s[i];
}

// dst row b = src row row_of[b] (or row row_of[b + 1] - 1 of an indptr), raw bytes.
void gather_rows(const Tensor& src, const Tensor& dst, const Tensor& row_of, bool last_of_indptr,
                 backend::Stream stream) {
  const int64_t row_bytes = src.size(1) * static_cast<int64_t>(dtype_size(src.dtype()));
  const auto s = backend::cuda::native_stream(stream);
  const dim3 grid(static_cast<unsigned>(dst.size(0)));
  if (row_bytes % 16 == 0 && is_aligned(src.raw(), 16) && is_aligned(dst.raw(), 16)) {
    launch_pdl(gather_rows_kernel<uint4>, grid, 256, 0, s, static_cast<const uint4*>(src.raw()),
               static_cast<uint4*>(dst.raw()), row_of.data<int32_t>(), row_bytes / 16, src.size(0),
               last_of_indptr);
  } else {
    launch_pdl(gather_rows_kernel<char>, grid, 256, 0, s, static_cast<const char*>(src.raw()),
               static_cast<char*>(dst.raw()), row_of.data<int32_t>(), row_bytes, src.size(0),
               last_of_indptr);
  }
}

// A tensor-parallel rank's part of the lookup: out row b = table row ids[b] - vocab_start when the
// id is in the rank's rows, else zeros.
template <typename Word>
__global__ void embedding_shard_kernel(const Word* __restrict__ table, Word* __restrict__ out,
                                       const int32_t* ids, int64_t row_words, int64_t vocab_start,
                                       int64_t shard_rows, int64_t vocab_size) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t b = blockIdx.x;
  const int64_t id = ids[b];
  if (id < 0 || id >= vocab_size) __trap();  // out-of-range id: a bug upstream
  const int64_t r = id - vocab_start;
  Word* d = out + b * row_words;
  if (r >= 0 && r < shard_rows) {
    const Word* s = table + r * row_words;
    for (int64_t i = threadIdx.x; i < row_words; i += blockDim.x) d[i] = s[i];
  } else {
    for (int64_t i = threadIdx.x; i < row_words; i += blockDim.x) d[i] = Word{};
  }
}

// dst row row_of[b] = src row b, raw bytes.
template <typename Word>
__global__ void scatter_rows_kernel(const Word* __restrict__ src, Word* __restrict__ dst,
                                    const int32_t* row_of, int64_t row_words,
                                    int64_t num_dst_rows) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t b = blockIdx.x;
  const int64_t r = row_of[b];
  if (r < 0 || r >= num_dst_rows) __trap();  // out-of-range row: a bug upstream
  const Word* s = src + b * row_words;
  Word* d = dst + r * row_words;
  for (int64_t i = threadIdx.x; i < row_words; i += blockDim.x) d[i] = s[i];
}

template <typename T>
__global__ void silu_and_mul_kernel(const T* gate_up, T* out, int64_t rows, int64_t inter) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t total = rows * inter;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = idx / inter, i = idx % inter;
    out[idx] = from_float<T>(silu_mul<T>(to_float(gate_up[r * 2 * inter + i]),
                                         to_float(gate_up[r * 2 * inter + inter + i])));
  }
}

// bf16 rows with inter % 8 == 0: 8 outputs per thread from 16-byte loads of gate and up and one
// 16-byte store; blockIdx.y strides over rows. (The scalar kernel above moved 2 bytes per load
// and reached about half the copy bandwidth: docs/perf-log/cuda-session-04.md.)
__global__ void silu_and_mul_vec_kernel(const __nv_bfloat16* gate_up, __nv_bfloat16* out,
                                        int64_t rows, int64_t inter) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) * 8;
  if (i >= inter) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const __nv_bfloat16* gate = gate_up + r * 2 * inter + i;
    const uint4 g8 = *reinterpret_cast<const uint4*>(gate);
    const uint4 u8 = *reinterpret_cast<const uint4*>(gate + inter);
    const auto* g = reinterpret_cast<const __nv_bfloat16*>(&g8);
    const auto* u = reinterpret_cast<const __nv_bfloat16*>(&u8);
    uint4 o8;
    auto* o = reinterpret_cast<__nv_bfloat16*>(&o8);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      o[j] = __float2bfloat16_rn(
          silu_mul<__nv_bfloat16>(__bfloat162float(g[j]), __bfloat162float(u[j])));
    }
    *reinterpret_cast<uint4*>(out + r * inter + i) = o8;
  }
}

template <typename T>
__global__ void relu_kernel(T* x, int64_t total) {
  pdl_wait();
  pdl_launch_dependents();
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[idx] = from_float<T>(fmaxf(to_float(x[idx]), 0.0f));
  }
}

template <typename T, typename B>
__global__ void add_bias_kernel(T* y, const B* bias, int64_t rows, int64_t cols) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t total = rows * cols;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[idx] = from_float<T>(to_float(y[idx]) + to_float(bias[idx % cols]));
  }
}

int grid_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<int>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

}  // namespace

void embedding(const Tensor& ids, const Tensor& table, const Tensor& out, backend::Stream stream) {
  if (ids.size(0) > 0) gather_rows(table, out, ids, false, stream);
}

void embedding_shard(const Tensor& ids, const Tensor& table, int64_t vocab_start,
                     int64_t vocab_size, const Tensor& out, backend::Stream stream) {
  if (ids.size(0) == 0) return;
  const int64_t row_bytes = table.size(1) * static_cast<int64_t>(dtype_size(table.dtype()));
  const auto s = backend::cuda::native_stream(stream);
  const dim3 grid(static_cast<unsigned>(ids.size(0)));
  if (row_bytes % 16 == 0 && is_aligned(table.raw(), 16) && is_aligned(out.raw(), 16)) {
    launch_pdl(embedding_shard_kernel<uint4>, grid, 256, 0, s,
               static_cast<const uint4*>(table.raw()), static_cast<uint4*>(out.raw()),
               ids.data<int32_t>(), row_bytes / 16, vocab_start, table.size(0), vocab_size);
  } else {
    launch_pdl(embedding_shard_kernel<char>, grid, 256, 0, s, static_cast<const char*>(table.raw()),
               static_cast<char*>(out.raw()), ids.data<int32_t>(), row_bytes, vocab_start,
               table.size(0), vocab_size);
  }
}

void gather_last_tokens(const Tensor& src, const Tensor& qo_indptr, const Tensor& out,
                        backend::Stream stream) {
  if (out.size(0) > 0) gather_rows(src, out, qo_indptr, true, stream);
}

void scatter_rows(const Tensor& src, const Tensor& rows, const Tensor& dst,
                  backend::Stream stream) {
  if (src.size(0) == 0) return;
  const int64_t row_bytes = src.size(1) * static_cast<int64_t>(dtype_size(src.dtype()));
  const auto s = backend::cuda::native_stream(stream);
  const dim3 grid(static_cast<unsigned>(src.size(0)));
  if (row_bytes % 16 == 0 && is_aligned(src.raw(), 16) && is_aligned(dst.raw(), 16)) {
    launch_pdl(scatter_rows_kernel<uint4>, grid, 256, 0, s, static_cast<const uint4*>(src.raw()),
               static_cast<uint4*>(dst.raw()), rows.data<int32_t>(), row_bytes / 16, dst.size(0));
  } else {
    launch_pdl(scatter_rows_kernel<char>, grid, 256, 0, s, static_cast<const char*>(src.raw()),
               static_cast<char*>(dst.raw()), rows.data<int32_t>(), row_bytes, dst.size(0));
  }
}

void silu_and_mul(const Tensor& gate_up, const Tensor& out, backend::Stream stream) {
  const int64_t total = out.numel();
  if (total == 0) return;
  const int64_t rows = out.size(0), inter = out.size(1);
  if (out.dtype() == DType::kBF16 && inter % 8 == 0 && is_aligned(gate_up.raw(), 16) &&
      is_aligned(out.raw(), 16)) {
    const dim3 grid(static_cast<unsigned>((inter / 8 + 255) / 256),
                    static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
    launch_pdl(silu_and_mul_vec_kernel, grid, 256, 0, backend::cuda::native_stream(stream),
               static_cast<const __nv_bfloat16*>(gate_up.raw()),
               static_cast<__nv_bfloat16*>(out.raw()), rows, inter);
    return;
  }
  SGL_DISPATCH_FLOAT(out.dtype(), T, {
    launch_pdl(silu_and_mul_kernel<T>, dim3(grid_for(total, 256)), 256, 0,
               backend::cuda::native_stream(stream), static_cast<const T*>(gate_up.raw()),
               static_cast<T*>(out.raw()), out.size(0), out.size(1));
  });
}

void relu(const Tensor& x, backend::Stream stream) {
  const int64_t total = x.numel();
  if (total == 0) return;
  SGL_DISPATCH_FLOAT(x.dtype(), T, {
    launch_pdl(relu_kernel<T>, dim3(grid_for(total, 256)), 256, 0,
               backend::cuda::native_stream(stream), static_cast<T*>(x.raw()), total);
  });
}

void add_bias(const Tensor& y, const Tensor& bias, backend::Stream stream) {
  const int64_t total = y.numel();
  if (total == 0) return;
  SGL_CHECK(bias.dtype() == DType::kBF16 || bias.dtype() == DType::kF32) << "bias dtype";
  SGL_DISPATCH_FLOAT(y.dtype(), T, {
    if (bias.dtype() == DType::kBF16) {
      launch_pdl(add_bias_kernel<T, __nv_bfloat16>, dim3(grid_for(total, 256)), 256, 0,
                 backend::cuda::native_stream(stream), static_cast<T*>(y.raw()),
                 static_cast<const __nv_bfloat16*>(bias.raw()), y.size(0), y.size(1));
    } else {
      launch_pdl(add_bias_kernel<T, float>, dim3(grid_for(total, 256)), 256, 0,
                 backend::cuda::native_stream(stream), static_cast<T*>(y.raw()),
                 static_cast<const float*>(bias.raw()), y.size(0), y.size(1));
    }
  });
}

void copy_bytes(const void* src, Device src_device, void* dst, Device dst_device, size_t bytes,
                backend::Stream stream, bool wait_for_host) {
  if (bytes == 0) return;
  SGL_CUDA_CHECK(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, backend::cuda::native_stream(stream)));
  if (wait_for_host && dst_device.is_cpu())
    SGL_CUDA_CHECK(cudaStreamSynchronize(backend::cuda::native_stream(stream)));
}

void copy_rows_2d(const void* src, size_t src_pitch, void* dst, size_t dst_pitch, size_t row_bytes,
                  size_t rows, backend::Stream stream) {
  if (rows == 0 || row_bytes == 0) return;
  SGL_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, rows,
                                   cudaMemcpyDeviceToDevice, backend::cuda::native_stream(stream)));
}

void zero_bytes(void* dst, size_t bytes, backend::Stream stream) {
  if (bytes > 0)
    SGL_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, backend::cuda::native_stream(stream)));
}

}  // namespace sgl::kernels::cuda
