// Host application of grammar masks.
#include "sampling/vocab_mask.h"

#include <limits>

#include "core/check.h"

namespace sgl::sampling {

void apply_vocab_mask(const Tensor& logits, const VocabMask& mask) {
  if (mask.empty()) return;
  SGL_CHECK(logits.device().is_cpu() && logits.dtype() == DType::kF32 && logits.ndim() == 2 &&
            logits.is_contiguous())
      << "apply_vocab_mask: host f32 [bs, vocab] logits, got " << logits.shape_string();
  const int64_t bs = logits.size(0), vocab = logits.size(1);
  SGL_CHECK(vocab <= int64_t{mask.words} * 32 &&
            mask.bits.size() == mask.rows.size() * static_cast<size_t>(mask.words))
      << "apply_vocab_mask: " << mask.words << " words per row for a vocabulary of " << vocab;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < mask.rows.size(); ++i) {
    const int32_t row = mask.rows[i];
    SGL_CHECK(row >= 0 && row < bs) << "apply_vocab_mask: row " << row << " of " << bs;
    float* x = logits.data<float>() + row * vocab;
    const uint32_t* bits = mask.bits.data() + i * static_cast<size_t>(mask.words);
    for (int64_t t = 0; t < vocab; ++t) {
      if (((bits[t / 32] >> (t % 32)) & 1u) == 0) x[t] = kNegInf;
    }
  }
}

}  // namespace sgl::sampling
