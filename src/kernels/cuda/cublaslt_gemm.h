// CublasLtGemm: the linear layer's GEMM through cuBLASLt, one plan (descriptors + algorithm)
// cached per shape.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "backend/stream.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace sgl::kernels::cuda {

// Row-major y[m, n] = x[m, k] @ w[n, k]^T (+ bias[n]); f32 accumulate.
//   x: [m, k], rows may be strided (stride(0) >= k); w: [n, k] contiguous, x's dtype
//   (f32, bf16 or f16); y: [m, n] contiguous, f32 or x's dtype; bias: [n] or undefined.
// The bias rides in cuBLASLt's epilogue (CUBLASLT_EPILOGUE_BIAS) when its dtype is y's (what
// the epilogue takes); otherwise the GEMM runs plain and add_bias follows.
//
// Ownership: one per stream, part of the stream's StreamGemms (stream_gemms.h), made on the
// stream's first GEMM; no globals. The cuBLASLt handle is its own; the workspace
// is the stream's (shared with cuBLAS, safe because both queue on that one stream).
// Thread-safe: a mutex guards the cache and each call (a cached descriptor carries the bias
// pointer, set per call). One plan per (m, n, k, ldx, dtypes, bias, pointer alignments) met; a
// server meets a new m with nearly every prefill size, so once the cache holds max_plans the
// next new shape empties it (a plan is rebuilt in tens of microseconds on the host; keeping the
// hot ones would need use tracking that every call pays for).
// CUDA graphs: run() makes no device allocation and queues one cublasLtMatmul (+ add_bias)
// with the stream's fixed workspace, so it can be captured. Building a plan only calls host
// functions (descriptor creation, the heuristic query), so even a shape first met during
// capture is fine; the graph runner's eager pass before each capture builds them anyway.
class CublasLtGemm {
 public:
  static constexpr size_t kDefaultMaxPlans = 4096;

  // Borrows `workspace` (device memory of `workspace_bytes`); it must outlive this object.
  CublasLtGemm(void* workspace, size_t workspace_bytes, size_t max_plans = kDefaultMaxPlans);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // Queues y = x w^T (+ bias) on `stream` (arguments validated by kernels::linear). Returns
  // false, having queued nothing, when cuBLASLt has no algorithm for this shape.
  bool run(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
           backend::Stream stream);

  // Plans cached (shapes met since the cache was last emptied), and how many of them found no
  // cuBLASLt algorithm.
  size_t cache_size() const;
  size_t plans_without_algorithm() const;

 private:
  // What an algorithm is chosen for. Alignments are the pointers' (bytes, capped at 256):
  // cuBLASLt algorithms may need more than the element size.
  struct Key {
    int64_t m = 0, n = 0, k = 0, ldx = 0;
    DType in = DType::kF32, out = DType::kF32;
    bool fused_bias = false;
    uint32_t align_x = 0, align_w = 0, align_y = 0, align_bias = 0;
    auto operator<=>(const Key&) const = default;
  };
  struct Plan;  // cuBLASLt descriptors + algorithm (cublaslt_gemm.cpp)
  const Plan& plan_for(const Key& key, const void* bias);  // mu_ held

  void* handle_ = nullptr;  // cublasLtHandle_t
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  size_t max_plans_;
  mutable std::mutex mu_;
  std::map<Key, std::unique_ptr<Plan>> plans_;  // guarded by mu_
};

}  // namespace sgl::kernels::cuda
