// Logit processing: penalties, logit_bias, min_new_tokens mask.
#include "sampling/logit_processor.h"

#include <algorithm>
#include <limits>

#include "core/check.h"

namespace sgl::sampling {
namespace {

bool in_vocab(int32_t id, int64_t vocab) { return id >= 0 && id < vocab; }

// The distinct ids of `ids`, ascending, with how often each occurs.
std::vector<std::pair<int32_t, int32_t>> count_ids(std::span<const int32_t> ids) {
  std::vector<int32_t> sorted(ids.begin(), ids.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::pair<int32_t, int32_t>> counts;
  for (int32_t id : sorted) {
    if (!counts.empty() && counts.back().first == id) {
      ++counts.back().second;
    } else {
      counts.emplace_back(id, 1);
    }
  }
  return counts;
}

}  // namespace

void process_logits_row(float* logits, int64_t vocab, const LogitProcessorInput& input) {
  const SamplingParams& p = *input.params;
  const size_t prompt_len = std::min<size_t>(input.tokens.size(), std::max(input.prompt_len, 0));
  const std::span<const int32_t> generated = input.tokens.subspan(prompt_len);

  if (p.repetition_penalty != 1.f) {
    for (const auto& [id, count] : count_ids(input.tokens)) {
      if (!in_vocab(id, vocab)) continue;
      float& logit = logits[id];
      logit = logit > 0.f ? logit / p.repetition_penalty : logit * p.repetition_penalty;
    }
  }
  if (p.frequency_penalty != 0.f || p.presence_penalty != 0.f) {
    for (const auto& [id, count] : count_ids(generated)) {
      if (!in_vocab(id, vocab)) continue;
      logits[id] -= p.frequency_penalty * static_cast<float>(count) + p.presence_penalty;
    }
  }
  for (const LogitBias& b : p.logit_bias) {
    if (in_vocab(b.id, vocab)) logits[b.id] += b.bias;
  }
  if (static_cast<int64_t>(generated.size()) < p.min_new_tokens) {
    for (int32_t id : input.stop_ids) {
      if (in_vocab(id, vocab)) logits[id] = -std::numeric_limits<float>::infinity();
    }
  }
}

void process_logits(const Tensor& logits, const LogitProcessorBatch& batch) {
  SGL_CHECK(logits.device().is_cpu() && logits.ndim() == 2 && logits.is_contiguous())
      << "logit processor: logits " << logits.shape_string();
  SGL_CHECK_EQ(batch.rows.size(), batch.inputs.size());
  const int64_t vocab = logits.size(1);
  float* data = logits.data<float>();
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    SGL_CHECK(batch.rows[i] >= 0 && batch.rows[i] < logits.size(0));
    process_logits_row(data + batch.rows[i] * vocab, vocab, batch.inputs[i]);
  }
}

}  // namespace sgl::sampling
