// ModelBatchRunner: a BatchRunner over the real model — resolves input ids from the token
// table, builds the ForwardBatch, runs forward + sampling (with logit processing and prompt
// logprobs for the requests that ask), records sampled ids in the table.
#pragma once

#include <vector>

#include "cache/req_to_token_pool.h"
#include "runner/batch_executor.h"
#include "runner/forward_batch_builder.h"
#include "runner/model_runner.h"
#include "sampling/logit_processor.h"

namespace sgl::runner {

class ModelBatchRunner final : public BatchRunner {
 public:
  // Borrows `model_runner` and `req_to_token` (the scheduler's pool, whose rows it reads).
  ModelBatchRunner(ModelRunner& model_runner, const cache::ReqToTokenPool& req_to_token);
  ExecResult run(const ExecBatch& batch) override;

 private:
  int32_t* token_row(int32_t req_pool_idx) {
    return token_table_.data() + static_cast<size_t>(req_pool_idx) * context_len_;
  }
  // Penalties / bias / min_new_tokens inputs of the requests that use them (row i = request i).
  sampling::LogitProcessorBatch logit_processing(const ExecBatch& batch);
  // Scores the prompt tokens the requests asked for; `logits` has one row per token.
  std::vector<sampling::PromptLogprobs> score_prompts(const ExecBatch& batch,
                                                      const ForwardBatch& fb,
                                                      const Tensor& logits) const;
  // Copies each request's last logits row of an all-tokens forward into last_rows_.
  Tensor gather_last_rows(const ForwardBatch& fb, const Tensor& logits);

  ModelRunner& model_runner_;
  int32_t context_len_;
  // i32 [max_reqs, context_len]: the token id at each position of each request row. Prompt ids
  // are written when a batch carries them; sampled ids right after sampling.
  std::vector<int32_t> token_table_;
  ForwardBatchBuilder builder_;
  std::vector<int32_t> input_ids_;  // scratch: [num_tokens]
  std::vector<float> last_rows_;    // scratch: f32 [bs, vocab] (prompt-logprob batches)
};

}  // namespace sgl::runner
