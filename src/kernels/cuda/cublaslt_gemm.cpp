// CublasLtGemm: cached cuBLASLt plans for the linear layer's GEMM.
#include "kernels/cuda/cublaslt_gemm.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "backend/cuda/native_stream.h"
#include "core/check.h"
#include "kernels/cuda/cuda_data_type.h"
#include "kernels/cuda/cuda_ops.h"

namespace sgl::kernels::cuda {
namespace {

void check(cublasStatus_t status, const char* what) {
  SGL_CHECK(status == CUBLAS_STATUS_SUCCESS)
      << what << " failed: " << cublasLtGetStatusString(status);
}

template <typename T>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  check(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)),
        "cublasLtMatmulDescSetAttribute");
}

template <typename T>
void set(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
         const T& value) {
  check(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)),
        "cublasLtMatmulPreferenceSetAttribute");
}

// Largest power of two dividing the address, capped at 256 (cuBLASLt's default assumption).
uint32_t alignment(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  if (addr == 0) return 256;
  const uintptr_t low_bit = addr & (~addr + 1);
  return static_cast<uint32_t>(low_bit < 256 ? low_bit : 256);
}

// A column-major matrix layout of `rows` x `cols` with leading dimension `ld`.
cublasLtMatrixLayout_t layout(DType dtype, int64_t rows, int64_t cols, int64_t ld) {
  cublasLtMatrixLayout_t out = nullptr;
  check(cublasLtMatrixLayoutCreate(&out, cuda_data_type(dtype), static_cast<uint64_t>(rows),
                                   static_cast<uint64_t>(cols), ld),
        "cublasLtMatrixLayoutCreate");
  return out;
}

}  // namespace

// cuBLASLt is column-major, so row-major y[m, n] = x[m, k] w[n, k]^T is computed as
// column-major D[n, m] = op(A)[n, k] B[k, m] with A = w read as [k, n] (ld k) and transposed,
// B = x read as [k, m] (ld = x's row stride), C = D = y read as [n, m] (ld n). The bias
// epilogue adds bias[n] to every column of D, i.e. to every row of y.
struct CublasLtGemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t w = nullptr;  // A
  cublasLtMatrixLayout_t x = nullptr;  // B
  cublasLtMatrixLayout_t y = nullptr;  // C and D
  cublasLtMatmulAlgo_t algo{};
  bool has_algorithm = false;

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (y != nullptr) cublasLtMatrixLayoutDestroy(y);
    if (x != nullptr) cublasLtMatrixLayoutDestroy(x);
    if (w != nullptr) cublasLtMatrixLayoutDestroy(w);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
};

CublasLtGemm::CublasLtGemm(void* workspace, size_t workspace_bytes, size_t max_plans)
    : workspace_(workspace), workspace_bytes_(workspace_bytes), max_plans_(max_plans) {
  SGL_CHECK(max_plans >= 1) << "cuBLASLt plan cache of no plans";
  cublasLtHandle_t handle = nullptr;
  check(cublasLtCreate(&handle), "cublasLtCreate");
  handle_ = handle;
}

CublasLtGemm::~CublasLtGemm() {
  plans_.clear();
  cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
}

const CublasLtGemm::Plan& CublasLtGemm::plan_for(const Key& key, const void* bias) {
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  if (plans_.size() >= max_plans_) plans_.clear();  // no call holds a plan: mu_ is held
  auto plan = std::make_unique<Plan>();
  check(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  set(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  if (key.fused_bias) {
    set(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
    // The heuristic reads the pointer's alignment; run() sets each call's pointer.
    set(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  }
  plan->w = layout(key.in, key.k, key.n, key.k);
  plan->x = layout(key.in, key.k, key.m, key.ldx);
  plan->y = layout(key.out, key.n, key.m, key.n);

  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(workspace_bytes_));
  set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_w);
  set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_x);
  set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_y);
  set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_y);
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  // NOTE: "no algorithm" comes back as CUBLAS_STATUS_NOT_SUPPORTED, not as an error to abort on.
  // (Timing the heuristic's top 8 on the call's operands for decode-sized shapes was tried: a
  // much slower startup and no faster steps, docs/perf-log/cuda-session-03.md; so its first
  // choice is taken.)
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(static_cast<cublasLtHandle_t>(handle_), plan->desc, plan->w,
                                     plan->x, plan->y, plan->y, pref, 1, &result, &count);
  cublasLtMatmulPreferenceDestroy(pref);
  plan->has_algorithm =
      status == CUBLAS_STATUS_SUCCESS && count > 0 && result.state == CUBLAS_STATUS_SUCCESS;
  if (plan->has_algorithm) plan->algo = result.algo;
  return *plans_.emplace(key, std::move(plan)).first->second;
}

bool CublasLtGemm::run(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                       backend::Stream stream) {
  Key key;
  key.m = x.size(0);
  key.k = x.size(1);
  key.n = w.size(0);
  key.ldx = x.stride(0);
  key.in = x.dtype();
  key.out = y.dtype();
  // The epilogue's bias has y's dtype (cublasLt.h, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE).
  key.fused_bias = bias.defined() && bias.dtype() == y.dtype();
  key.align_x = alignment(x.raw());
  key.align_w = alignment(w.raw());
  key.align_y = alignment(y.raw());
  key.align_bias = key.fused_bias ? alignment(bias.raw()) : 0;
  {
    std::lock_guard lock(mu_);
    const Plan& plan = plan_for(key, key.fused_bias ? bias.raw() : nullptr);
    if (!plan.has_algorithm) return false;
    if (key.fused_bias) set(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.raw());
    const float alpha = 1.f, beta = 0.f;
    check(cublasLtMatmul(static_cast<cublasLtHandle_t>(handle_), plan.desc, &alpha, w.raw(), plan.w,
                         x.raw(), plan.x, &beta, y.raw(), plan.y, y.raw(), plan.y, &plan.algo,
                         workspace_, workspace_bytes_, backend::cuda::native_stream(stream)),
          "cublasLtMatmul");
  }
  if (bias.defined() && !key.fused_bias) add_bias(y, bias, stream);
  return true;
}

size_t CublasLtGemm::cache_size() const {
  std::lock_guard lock(mu_);
  return plans_.size();
}

size_t CublasLtGemm::plans_without_algorithm() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [key, plan] : plans_) n += plan->has_algorithm ? 0 : 1;
  return n;
}

}  // namespace sgl::kernels::cuda
