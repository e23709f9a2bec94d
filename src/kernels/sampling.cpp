// sample_tokens: validates its arguments once, then runs the CUDA launcher; packed parameter rows.
#include "kernels/sampling.h"

#include "kernels/check_args.h"
#include "kernels/sampling_math.h"
#ifdef SGL_WITH_CUDA
#include "kernels/cuda/cuda_sampling.h"
#endif

namespace sgl::kernels {
namespace {

void check_row_array(const Tensor& t, DType dtype, int64_t bs, const Tensor& logits,
                     const char* name, const char* op = "sample_tokens") {
  SGL_CHECK(t.defined() && t.dtype() == dtype && t.ndim() == 1 && t.size(0) == bs &&
            t.is_contiguous())
      << op << ": " << name << " must be " << dtype_name(dtype) << " [" << bs << "], got "
      << (t.defined() ? t.shape_string() : "undefined");
  detail::check_same_device(t, logits, op);
}

}  // namespace

void sample_tokens(const Tensor& logits, const SamplingRows& rows, const SampledTokens& out,
                   backend::Stream stream) {
  SGL_CHECK(logits.dtype() == DType::kF32 && logits.ndim() == 2)
      << "sample_tokens: logits must be f32 [bs, V], got " << logits.shape_string();
  detail::check_last_dim_contiguous(logits, "sample_tokens");
  const int64_t bs = logits.size(0), vocab = logits.size(1);
  SGL_CHECK(vocab > 0 && vocab <= sampling_math::kMaxVocab) << "sample_tokens: vocab " << vocab;
  SGL_CHECK(bs <= 65535) << "sample_tokens: " << bs << " rows (at most 65535, a grid dimension)";
  check_row_array(rows.temperature, DType::kF32, bs, logits, "temperature");
  check_row_array(rows.top_k, DType::kI32, bs, logits, "top_k");
  check_row_array(rows.top_p, DType::kF32, bs, logits, "top_p");
  check_row_array(rows.min_p, DType::kF32, bs, logits, "min_p");
  check_row_array(rows.seed, DType::kI64, bs, logits, "seed");
  check_row_array(rows.step, DType::kI64, bs, logits, "step");
  check_row_array(out.next_token_ids, DType::kI32, bs, logits, "next_token_ids");
  if (out.next_token_logprobs.defined()) {
    check_row_array(out.next_token_logprobs, DType::kF32, bs, logits, "next_token_logprobs");
  }
  SGL_CHECK(out.top_logprob_ids.defined() == out.top_logprobs.defined())
      << "sample_tokens: top_logprob_ids and top_logprobs go together";
  if (out.top_logprobs.defined()) {
    check_row_array(rows.top_logprobs_num, DType::kI32, bs, logits, "top_logprobs_num");
    for (const Tensor* t : {&out.top_logprob_ids, &out.top_logprobs}) {
      SGL_CHECK(t->ndim() == 2 && t->size(0) == bs && t->size(1) >= 1 &&
                t->size(1) <= kMaxTopLogprobs && t->is_contiguous())
          << "sample_tokens: top logprobs must be [" << bs << ", k <= " << kMaxTopLogprobs
          << "], got " << t->shape_string();
      detail::check_same_device(*t, logits, "sample_tokens");
    }
    SGL_CHECK(out.top_logprob_ids.dtype() == DType::kI32 &&
              out.top_logprobs.dtype() == DType::kF32 &&
              out.top_logprob_ids.size(1) == out.top_logprobs.size(1))
        << "sample_tokens: top logprobs must be i32 ids and f32 logprobs of one width";
  }
  SGL_CHECK(!logits.device().is_cpu())
      << "sample_tokens runs on CUDA; host logits go through sampling::Sampler";
  if (bs == 0) return;
#ifdef SGL_WITH_CUDA
  cuda::sample_tokens(logits, rows, out, stream);
#else
  detail::no_cuda("sample_tokens");
#endif
}

void apply_token_bitmask(const Tensor& logits, const Tensor& rows, const Tensor& bitmask,
                         backend::Stream stream) {
  SGL_CHECK(logits.dtype() == DType::kF32 && logits.ndim() == 2)
      << "apply_token_bitmask: logits must be f32 [bs, V], got " << logits.shape_string();
  detail::check_last_dim_contiguous(logits, "apply_token_bitmask");
  const int64_t n = rows.defined() ? rows.size(0) : 0;
  check_row_array(rows, DType::kI32, n, logits, "rows", "apply_token_bitmask");
  SGL_CHECK(bitmask.dtype() == DType::kI32 && bitmask.ndim() == 2 && bitmask.size(0) == n &&
            bitmask.size(1) * 32 >= logits.size(1) && bitmask.is_contiguous())
      << "apply_token_bitmask: bitmask must be i32 [" << n << ", >= ceil(" << logits.size(1)
      << " / 32)], got " << bitmask.shape_string();
  detail::check_same_device(bitmask, logits, "apply_token_bitmask");
  SGL_CHECK(!logits.device().is_cpu())
      << "apply_token_bitmask runs on CUDA; host logits go through sampling::apply_vocab_mask";
  SGL_CHECK(n <= 65535) << "apply_token_bitmask: " << n << " rows (at most 65535)";
  if (n == 0) return;
#ifdef SGL_WITH_CUDA
  cuda::apply_token_bitmask(logits, rows, bitmask, stream);
#else
  detail::no_cuda("apply_token_bitmask");
#endif
}

// Layout: seed i64, step i64, then temperature, top_p, min_p (f32), top_k, top_logprobs_num
// (i32), each `capacity` long: 8-byte arrays first, so every array stays aligned.
int64_t packed_sampling_rows_bytes(int64_t capacity) { return capacity * (2 * 8 + 5 * 4); }

SamplingRows packed_sampling_rows(void* block, Device device, int64_t capacity, int64_t bs) {
  SGL_CHECK(bs >= 0 && bs <= capacity) << "packed_sampling_rows: " << bs << " of " << capacity;
  SGL_CHECK(reinterpret_cast<uintptr_t>(block) % 8 == 0) << "packed_sampling_rows: unaligned";
  char* at = static_cast<char*>(block);
  const auto next = [&](DType dtype) {
    Tensor t(at, dtype, {bs}, device);
    at += capacity * static_cast<int64_t>(dtype_size(dtype));
    return t;
  };
  SamplingRows rows;
  rows.seed = next(DType::kI64);
  rows.step = next(DType::kI64);
  rows.temperature = next(DType::kF32);
  rows.top_p = next(DType::kF32);
  rows.min_p = next(DType::kF32);
  rows.top_k = next(DType::kI32);
  rows.top_logprobs_num = next(DType::kI32);
  return rows;
}

}  // namespace sgl::kernels
