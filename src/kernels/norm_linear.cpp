// The folded norm's dispatchers: the shapes checked here, then CUDA's GEMV (kernels/cuda/gemv.h,
// which checks that the fold applies); no other backend folds.
#include "kernels/norm_linear.h"

#include "core/check.h"
#include "kernels/check_args.h"
#ifdef SGL_WITH_CUDA
#include "kernels/cuda/gemv.h"
#endif

namespace sgl::kernels {
namespace {

// out: contiguous [m, cols] rows on x's device, m = x's rows.
void check_output_rows(const Tensor& x, const Tensor& out, int64_t cols, const char* op) {
  SGL_CHECK(out.ndim() == 2 && out.size(0) == x.size(0) && out.size(1) == cols &&
            out.is_contiguous())
      << op << ": output " << out.shape_string() << " for " << cols << " columns";
  detail::check_same_device(x, out, op);
}

}  // namespace

bool norm_folds_into_linear(const Tensor& x, const ResidualRmsNorm& norm, const Tensor& w,
                            FoldedProjection kind) {
#ifdef SGL_WITH_CUDA
  return x.device().is_cuda() &&
         cuda::gemv_fold_norm_applies(x, norm, w, kind == FoldedProjection::kSiluAndMul);
#else
  (void)x, (void)norm, (void)w, (void)kind;
  return false;
#endif
}

void add_rms_norm_linear(const Tensor& x, const ResidualRmsNorm& norm, const Tensor& w,
                         const Tensor& bias, const Tensor& y, const Tensor& normed,
                         backend::Stream stream) {
  const char* op = "add_rms_norm_linear";
  SGL_CHECK(x.device().is_cuda()) << op << ": only CUDA folds the norm (norm_folds_into_linear)";
  check_output_rows(x, y, w.size(0), op);
  if (bias.defined()) {
    SGL_CHECK(bias.ndim() == 1 && bias.size(0) == w.size(0))
        << op << ": bias " << bias.shape_string();
    detail::check_same_device(x, bias, op);
  }
  if (normed.defined()) check_output_rows(x, normed, x.size(1), op);
#ifdef SGL_WITH_CUDA
  cuda::gemv_add_rms_norm(x, norm, w, bias, y, normed, stream);
#else
  (void)norm, (void)stream;
  detail::no_cuda(op);
#endif
}

void add_rms_norm_linear_silu_and_mul(const Tensor& x, const ResidualRmsNorm& norm,
                                      const Tensor& w_gate_up, const Tensor& out,
                                      backend::Stream stream) {
  const char* op = "add_rms_norm_linear_silu_and_mul";
  SGL_CHECK(x.device().is_cuda()) << op << ": only CUDA folds the norm (norm_folds_into_linear)";
  SGL_CHECK(w_gate_up.ndim() == 2 && w_gate_up.size(0) % 2 == 0)
      << op << ": w_gate_up " << w_gate_up.shape_string() << " is not [gate; up]";
  check_output_rows(x, out, w_gate_up.size(0) / 2, op);
#ifdef SGL_WITH_CUDA
  cuda::gemv_add_rms_norm_silu_and_mul(x, norm, w_gate_up, out, stream);
#else
  (void)norm, (void)stream;
  detail::no_cuda(op);
#endif
}

}  // namespace sgl::kernels
