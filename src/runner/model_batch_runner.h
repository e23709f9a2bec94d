// ModelBatchRunner: a BatchRunner over the real model — resolves input ids from the token
// table, builds the ForwardBatch, runs forward + sampling (with logit processing and prompt
// logprobs for the requests that ask), records sampled ids in the table; an embedding model's
// pooling batch returns its pooled rows instead. On a GPU a batch that needs no host logits is
// only launched (ModelRunner::launch_forward_and_sample): a decode request whose last token the
// unfinished batch before it samples reads that token on the device (sampled_id_ref), so batch
// N+1 is queued before batch N's ids reach the host. With an EAGLE draft head every batch runs
// on the host: the head drafts the verify entries' tokens before the pass and extends over what
// the pass kept after it (runner/eagle_worker.h).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "cache/req_to_token_pool.h"
#include "runner/batch_executor.h"
#include "runner/eagle_worker.h"
#include "runner/forward_batch_builder.h"
#include "runner/model_runner.h"
#include "sampling/logit_processor.h"

namespace sgl::runner {

class ModelBatchRunner final : public BatchRunner {
 public:
  // Borrows `model_runner`. `req_to_token` is the scheduler's pool: the runner keeps its own copy
  // of its table, of its shape, brought up to date by each batch's req_to_token_writes.
  // `eagle_draft` (borrowed, over the same model runner): EAGLE speculative decoding.
  // `bench_accept_length` (sgl-bench only; SpeculativeOptions::bench_accept_length): each
  // chain verify takes its first bench_accept_length - 1 drafts as the target's samples.
  ModelBatchRunner(ModelRunner& model_runner, const cache::ReqToTokenPool& req_to_token,
                   EagleDraftRunner* eagle_draft = nullptr, int32_t bench_accept_length = 0);
  void launch(const ExecBatch& batch) override;
  ExecResult finish() override;

 private:
  // A launched batch: its result, complete at once for batches sampled on the host; a device
  // launch's output comes at finish().
  struct Launched {
    ExecResult result;  // batch_id set at launch
    std::optional<ModelRunner::LaunchedSample> sample;
    std::vector<int32_t> rows;      // [bs] req_pool_idx
    std::vector<int32_t> next_pos;  // [bs] the position each sampled id takes; -1: dropped
  };
  int32_t* token_row(int32_t req_pool_idx) {
    return token_table_.data() + static_cast<size_t>(req_pool_idx) * context_len_;
  }
  // Writes the sampled ids into the token table (under mutex_).
  void record_sampled(const Launched& launched, const std::vector<int32_t>& ids);
  // EagleWorker::resolve_drafts, then (when it resolved any) the ids written over the
  // references in the token rows and input_ids_.
  void resolve_drafts(const ExecBatch& batch, std::vector<speculative::DraftTree>& drafts);
  // Tree verifies: the token table's positions after each root take its accepted path's samples.
  void record_accepted_paths(const ExecBatch& batch, const ExecResult& result,
                             const std::vector<int32_t>& ids);
  // Host logits, processing, sampling into result's output and prompt logprobs: a batch whose
  // earlier batches are all finished. `all_rows`: the forward returned every token's logits
  // (prompt logprobs, verify entries).
  // `output`, when given, receives the forward's device output.
  void run_on_host(const ExecBatch& batch, const ForwardBatch& fb,
                   const sampling::SamplingBatch& sampling, bool process, bool all_rows,
                   ExecResult& result, model::ModelOutput* output = nullptr);
  // Penalties / bias / min_new_tokens inputs of the requests that use them (request i's row:
  // first_row[i]).
  sampling::LogitProcessorBatch logit_processing(const ExecBatch& batch,
                                                 const std::vector<int64_t>& first_row);
  // Scores the prompt tokens the requests asked for; `logits` has one row per token.
  std::vector<sampling::PromptLogprobs> score_prompts(const ExecBatch& batch,
                                                      const ForwardBatch& fb,
                                                      const Tensor& logits) const;
  // --speculative-bench-accept-length L: overwrites each verify entry's first L - 1 samples with
  // its drafts (input ids after its last token), as if the target had drawn them, and the next
  // sample with another id where it equals the next draft: exactly L - 1 drafts stand.
  void force_acceptance(const ExecBatch& batch, std::vector<int32_t>& sampled) const;
  // Copies each request's last sample_rows logits rows of an all-tokens forward into
  // sampled_rows_, request after request.
  Tensor gather_sampled_rows(const ExecBatch& batch, const ForwardBatch& fb, const Tensor& logits);
  // The hidden states (every token's, fb captured kFull) of the requests that asked, as host f32
  // (ExecResult::hidden_states); waits for the forward.
  std::vector<std::vector<float>> requested_hidden_states(const ExecBatch& batch,
                                                          const ForwardBatch& fb,
                                                          const Tensor& hidden_states);
  // The routed experts (model::ModelOutput::routed_experts) of the requests that asked, each
  // token-major (ExecResult::routed_experts); waits for the forward.
  std::vector<std::vector<int32_t>> requested_routed_experts(const ExecBatch& batch,
                                                             const ForwardBatch& fb,
                                                             const Tensor& routed);

  ModelRunner& model_runner_;
  int32_t context_len_;
  // launch() only: the KV slots of each request row as of the batch being launched. NOTE: the
  // forward reads it (CPU) or gathers it (GPU) inside launch(), so the next launch may rewrite it.
  cache::ReqToTokenTable req_to_token_;
  ForwardBatchBuilder builder_;          // launch() only
  std::vector<int32_t> input_ids_;       // launch() only; scratch: [num_tokens]
  std::vector<int32_t> lora_ids_;        // launch() only: ForwardBatch::lora_ids_host [bs]
  std::vector<float> sampled_rows_;      // launch() only; scratch: f32 [sampled rows, vocab]
  std::vector<uint8_t> hidden_staging_;  // launch() only; scratch: device hidden rows on the host
  std::vector<int32_t> routed_staging_;  // launch() only; scratch: device expert ids on the host
  std::unique_ptr<EagleWorker> eagle_;   // launch() only; null without an EAGLE draft
  int32_t bench_accept_length_ = 0;

  // Shared by launch() and finish(), under mutex_.
  std::mutex mutex_;
  std::condition_variable batch_finished_;
  // i32 [max_reqs, context_len]: the token id at each position of each request row. Prompt ids
  // are written when a batch carries them; sampled ids when their batch is finished (at once
  // for host sampling).
  std::vector<int32_t> token_table_;
  std::deque<Launched> unfinished_;  // launched, not finished, oldest first
  // Per request row: the unfinished device launch that samples its next id (batch id, -1 for
  // none) and the row's index in that batch.
  std::vector<int64_t> pending_batch_;
  std::vector<int32_t> pending_index_;
};

}  // namespace sgl::runner
