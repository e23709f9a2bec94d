// BatchExecutor: runs scheduled batches in submission order, possibly on another thread, so the
// scheduler can build batch N+1 while batch N runs (the overlap loop).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cache/req_to_token_table.h"
#include "forward/forward_mode.h"
#include "forward/pooling.h"
#include "sampling/prompt_logprobs.h"
#include "sampling/sampler.h"
#include "sampling/sampling_params.h"
#include "sampling/vocab_mask.h"

namespace sgl::runner {

// One request's part of a batch, in host values the executor copies at submit().
struct ExecRequest {
  int32_t req_pool_idx = 0;
  int32_t prefix_len = 0;  // tokens already in the KV cache
  int32_t extend_len = 0;  // new tokens this pass
  // The new tokens' ids when the scheduler knows them (prompts, recomputation). Empty for a
  // decode step: its input is the token sampled last for this row, read from the token table
  // on the executor side, so no host round trip sits between two batches.
  std::vector<int32_t> input_ids;
  sampling::SamplingParams sampling;  // seed set
  int32_t top_logprobs_num = 0;
  bool return_logprob = false;
  // False for a prefill chunk before the prompt's last: the id it samples is dropped.
  bool samples = true;
  // Such a chunk's next prompt token (-1 otherwise): an EAGLE draft extends each position with
  // the token after it.
  int32_t next_input_id = -1;
  // Positions sampled, the pass's last ones: 1, or a speculative verify's 1 + drafts (each row
  // sampled with the step of its own position, so it draws what plain decoding would).
  int32_t sample_rows = 1;
  // Apply sampling/logit_processor.h to this request's row: a penalty or logit_bias, or
  // min_new_tokens not reached yet. False costs nothing.
  bool process_logits = false;
  // Row positions from prompt_len on hold generated tokens (logit processing reads them).
  int32_t prompt_len = 0;
  // [prefix_len] ids of the cached prefix, sent only for requests with penalties (which read
  // the whole row) when the prefix came from the radix cache or a retraction: their row
  // positions were never written.
  std::vector<int32_t> cached_prefix_ids = {};
  // EOS + stop_token_ids, masked while fewer than sampling.min_new_tokens tokens were generated;
  // empty when min_new_tokens is 0.
  std::vector<int32_t> min_tokens_stop_ids = {};
  // Prompt logprobs: the logits at positions [logprob_begin, logprob_begin + size) of this pass
  // score these tokens (the prompt token after each position). Empty: none wanted.
  int32_t logprob_begin = 0;
  std::vector<int32_t> logprob_targets = {};
  // SGLang's token_ids_logprob (with return_logprob): the sampled position's, and each scored
  // prompt position's, logprobs of these ids. Empty: none.
  std::vector<int32_t> token_ids_logprob = {};
  // SGLang's return_hidden_states: this pass's tokens' final-norm outputs come back
  // (ExecResult::hidden_states). The batch then runs eagerly and samples on the host.
  bool return_hidden_states = false;
  // SGLang's return_routed_experts (the runner's enable_return_routed_experts): this pass's
  // tokens' expert ids come back (ExecResult::routed_experts). The batch samples on the host.
  bool return_routed_experts = false;
  // The request's LoRA adapter (ModelRunnerOptions::lora_paths): 0 none, i the i-th.
  int32_t lora_id = 0;
};

struct ExecBatch {
  int64_t id = 0;  // increasing; results come back with it
  ForwardMode mode = ForwardMode::kExtend;
  // kNone: sample. Otherwise an embedding model's batch: each request's hidden states pooled
  // over this pass (ForwardBatch::pooling) instead; nothing is sampled.
  PoolingType pooling = PoolingType::kNone;
  std::vector<ExecRequest> requests;
  // [sum of extend_len]: the KV slots of the new tokens, request after request (extend_len each).
  std::vector<int32_t> out_cache_loc;
  // The scheduler's req_to_token writes since the batch before (ReqToTokenPool::take_writes()).
  // A runner keeps its own copy of the table and applies these before running the batch, so
  // the scheduler may rewrite a row for the next batch while this one still reads it.
  cache::ReqToTokenWrites req_to_token_writes;
  // Grammar masks of the constrained requests (rows = indices into `requests`); invalid when
  // none is constrained. Ready once the batch before is processed: a runner waits for it only
  // right before sampling.
  sampling::VocabMaskFuture vocab_mask;
  // EAGLE: a plain decode batch the draft head skips (ScheduleBatch::skip_draft).
  bool skip_draft = false;
};

struct ExecResult {
  int64_t batch_id = 0;
  // ExecRequest::sample_rows rows per request, in order; empty for a pooling batch.
  sampling::SampleOutput output;
  // A pooling batch's: f32 [bs, hidden], row i request i's (model::ModelOutput::embeddings).
  std::vector<float> embeddings;
  // [bs] when some request wanted prompt logprobs (the others' entries empty), else empty.
  std::vector<sampling::PromptLogprobs> prompt_logprobs;
  // [bs] when some request wanted hidden states (ExecRequest::return_hidden_states): its tokens'
  // final-norm outputs, f32 [extend_len, hidden] row-major (the others' entries empty); else
  // empty.
  std::vector<std::vector<float>> hidden_states;
  // [bs] when some request wanted routed experts (ExecRequest::return_routed_experts): each MoE
  // layer's top-k ids at its tokens, i32 [extend_len, MoE layers, top_k] (the others' entries
  // empty); else empty.
  std::vector<std::vector<int32_t>> routed_experts;
  // [bs] when the runner drafted (EAGLE): each verify request's drafts, in place of the
  // placeholder ids its input carried (the others' entries empty); else empty.
  std::vector<std::vector<int32_t>> draft_ids;
  // [bs] when the runner drafted trees (--speculative-eagle-topk > 1): each verify request's
  // speculative::DraftTree::parents (node r + 1's parent node), else empty.
  std::vector<std::vector<int32_t>> draft_parents;
};

// Runs batches in order: launch() queues one (on a GPU it may return once the batch's work is
// queued on the device), finish() returns the oldest launched batch's result, waiting for it.
// launch() and finish() may run on two threads (one each). A runner may bound the batches
// launched and not finished (ModelBatchRunner: two; its launch() waits for finish() beyond).
class BatchRunner {
 public:
  virtual ~BatchRunner() = default;
  virtual void launch(const ExecBatch& batch) = 0;
  virtual ExecResult finish() = 0;
  // One batch to its end on the calling thread.
  ExecResult run(const ExecBatch& batch) {
    launch(batch);
    return finish();
  }
};

// A BatchRunner that computes each batch to its end inside launch() (the tests' fake models).
class ComputingBatchRunner : public BatchRunner {
 public:
  void launch(const ExecBatch& batch) final;
  ExecResult finish() final;

 protected:
  virtual ExecResult compute(const ExecBatch& batch) = 0;

 private:
  std::mutex mutex_;
  std::deque<ExecResult> done_;
};

// Executes batches in submission order. wait() returns the oldest unreturned result.
class BatchExecutor {
 public:
  virtual ~BatchExecutor() = default;
  virtual void submit(ExecBatch batch) = 0;
  virtual ExecResult wait() = 0;
  virtual int64_t in_flight() const = 0;
};

// Runs each batch inside wait(), on the caller's thread (the normal, non-overlap loop).
class SyncExecutor final : public BatchExecutor {
 public:
  explicit SyncExecutor(BatchRunner& runner) : runner_(runner) {}
  void submit(ExecBatch batch) override { pending_.push_back(std::move(batch)); }
  ExecResult wait() override;
  int64_t in_flight() const override { return static_cast<int64_t>(pending_.size()); }

 private:
  BatchRunner& runner_;
  std::deque<ExecBatch> pending_;
};

// Launches batches on its own worker thread, so submit() returns at once, and finishes them in
// wait(), on the caller's thread: with a GPU runner batch N+1 is queued on the device before
// batch N's results reach the host (the overlap loop).
class AsyncExecutor final : public BatchExecutor {
 public:
  // `spin`: how long the worker (for a submission) and wait() (for a launch) poll before they
  // sleep. Every step hands a batch one way and a result back; a sleeping thread wakes tens of
  // microseconds late, which a GPU step of half a millisecond feels (0: sleep at once).
  explicit AsyncExecutor(BatchRunner& runner, std::chrono::microseconds spin = {});
  ~AsyncExecutor() override;
  void submit(ExecBatch batch) override;
  ExecResult wait() override;
  int64_t in_flight() const override;

 private:
  void worker_loop();
  // Polls `ready` (read without the lock) for up to spin_; the caller then waits on cv_.
  template <typename Ready>
  void spin_until(Ready ready) const;
  BatchRunner& runner_;
  const std::chrono::microseconds spin_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<ExecBatch> queue_;  // submitted, not launched
  // Changed under mutex_; atomic for spin_until's unlocked reads.
  std::atomic<int64_t> queued_ = 0;    // queue_.size()
  std::atomic<int64_t> launched_ = 0;  // launched, not finished
  int64_t in_flight_ = 0;              // submitted, not finished
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace sgl::runner
