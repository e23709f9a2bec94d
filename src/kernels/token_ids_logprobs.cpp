// token_ids_logprobs: validates its arguments, then runs the CUDA launcher.
#include "kernels/token_ids_logprobs.h"

#include "kernels/check_args.h"
#include "kernels/sampling_math.h"
#ifdef SGL_WITH_CUDA
#include "kernels/cuda/cuda_token_ids_logprobs.h"
#endif

namespace sgl::kernels {

void token_ids_logprobs(const Tensor& logits, const Tensor& offsets, const Tensor& ids,
                        const Tensor& out, backend::Stream stream) {
  constexpr const char* kOp = "token_ids_logprobs";
  SGL_CHECK(logits.dtype() == DType::kF32 && logits.ndim() == 2)
      << kOp << ": logits must be f32 [bs, V], got " << logits.shape_string();
  detail::check_last_dim_contiguous(logits, kOp);
  const int64_t bs = logits.size(0), vocab = logits.size(1);
  SGL_CHECK(vocab > 0 && vocab <= sampling_math::kMaxVocab) << kOp << ": vocab " << vocab;
  SGL_CHECK(bs <= 65535) << kOp << ": " << bs << " rows (at most 65535)";
  SGL_CHECK(offsets.dtype() == DType::kI32 && offsets.ndim() == 1 && offsets.size(0) == bs + 1 &&
            offsets.is_contiguous())
      << kOp << ": offsets must be i32 [" << bs + 1 << "], got " << offsets.shape_string();
  SGL_CHECK(ids.dtype() == DType::kI32 && ids.ndim() == 1 && ids.is_contiguous())
      << kOp << ": ids must be i32 [n], got " << ids.shape_string();
  SGL_CHECK(out.dtype() == DType::kF32 && out.ndim() == 1 && out.size(0) == ids.size(0) &&
            out.is_contiguous())
      << kOp << ": out must be f32 [" << ids.size(0) << "], got " << out.shape_string();
  for (const Tensor* t : {&offsets, &ids, &out}) detail::check_same_device(*t, logits, kOp);
  SGL_CHECK(!logits.device().is_cpu())
      << kOp << " runs on CUDA; host logits go through sampling::Sampler";
  if (bs == 0 || ids.size(0) == 0) return;
#ifdef SGL_WITH_CUDA
  cuda::token_ids_logprobs(logits, offsets, ids, out, stream);
#else
  detail::no_cuda(kOp);
#endif
}

}  // namespace sgl::kernels
