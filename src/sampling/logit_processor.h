// Logit processing before sampling: repetition / frequency / presence penalties, logit_bias and
// the min_new_tokens mask, applied in place to f32 logits rows on the host.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "sampling/sampling_params.h"

namespace sgl::sampling {

// What one request's row is processed with; the spans are borrowed for the call.
struct LogitProcessorInput {
  const SamplingParams* params = nullptr;
  // The request's sequence so far: its prompt, then the tokens generated after it.
  std::span<const int32_t> tokens;
  // tokens[0:prompt_len] is the prompt. A prefill chunk sees only part of it (prompt_len >
  // tokens.size()); its sample is dropped anyway.
  int32_t prompt_len = 0;
  // The model's EOS ids and the request's stop_token_ids: -inf while fewer than
  // params->min_new_tokens tokens were generated (SGLang's min_new_tokens penalizer).
  std::span<const int32_t> stop_ids;
};

// Applies, in this order: repetition_penalty over the distinct prompt + generated tokens (HF:
// logit > 0 ? logit / p : logit * p); frequency and presence penalties over the generated
// tokens (OpenAI: logit -= frequency * count + presence * (count > 0)); logit_bias; the
// min_new_tokens mask. Ids outside [0, vocab) are ignored (the engine rejects them earlier).
void process_logits_row(float* logits, int64_t vocab, const LogitProcessorInput& input);

// The rows of a logits batch that need processing, with their inputs.
struct LogitProcessorBatch {
  std::vector<int64_t> rows;                // row index in the logits tensor
  std::vector<LogitProcessorInput> inputs;  // aligned with rows

  bool empty() const { return rows.empty(); }
  void add(int64_t row, const LogitProcessorInput& input) {
    rows.push_back(row);
    inputs.push_back(input);
  }
};

// logits: f32 [n, vocab], contiguous, on the host; rows not in `batch` are left unchanged.
void process_logits(const Tensor& logits, const LogitProcessorBatch& batch);

}  // namespace sgl::sampling
