// SchedulerOptions: the knobs of continuous batching, under SGLang's flag names.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "forward/pooling.h"
#include "scheduler/priority.h"
#include "speculative/speculative_options.h"

namespace sgl::scheduler {

// --schedule-policy. A closed set: an enum and a switch (schedule_policy.cpp).
enum class SchedulePolicy { kFcfs, kLpm, kDfsWeight, kLof, kRandom };

Result<SchedulePolicy> parse_schedule_policy(const std::string& name);
const char* schedule_policy_name(SchedulePolicy policy);

struct SchedulerOptions {
  int32_t max_running_requests = 256;  // --max-running-requests
  // SGLang's --max-loras-per-batch: the distinct LoRA adapters (the base model counted as one)
  // a batch may run; a waiting request of another adapter waits. 0: no LoRA, no bound.
  int32_t max_loras_per_batch = 0;
  int64_t max_prefill_tokens = 16384;   // --max-prefill-tokens: new tokens in one prefill batch
  int64_t chunked_prefill_size = 8192;  // --chunked-prefill-size; <= 0 disables chunking
  SchedulePolicy policy = SchedulePolicy::kFcfs;  // --schedule-policy
  bool disable_radix_cache = false;               // --disable-radix-cache
  // --enable-mixed-chunk, on by default here (--disable-mixed-chunk): a prefill batch formed
  // while requests decode carries their decode steps, so prefills never stall them.
  bool enable_mixed_chunk = true;
  // --mixed-chunk-size: the tokens of a batch that carries decodes, the decodes counted (every
  // running request waits for that batch's step), with at least a quarter of it for prefill;
  // batches with nothing decoding still take chunked_prefill_size / max_prefill_tokens. Why
  // 1280: docs/perf-log/2026-11-25-startup-and-serving-tails.md.
  int64_t mixed_chunk_size = 1280;
  double schedule_conservativeness = 1.0;  // --schedule-conservativeness
  int64_t max_queued_requests = 0;         // waiting-queue bound; 0 = unbounded
  double waiting_timeout_s = 0;            // abort requests waiting longer; 0 = never
  double running_timeout_s = 0;            // abort requests running longer; 0 = never
  uint64_t random_seed = 0;                // the random policy's shuffle
  // Input tokens of a prefill batch in which a request wants its prompt's logprobs (that batch
  // returns logits for every token): the model's logits buffer holds this many besides one row
  // per decode; longer prompts are scored in chunks. At least 1.
  int64_t max_scoring_tokens = 1024;
  // An embedding model's pooling (SGLang's --is-embedding; type kNone: a generation model).
  // Every request is then encoded: its prompt is prefilled (in chunks like any other), each
  // computed chunk's hidden states pooled by the model, and the request ends with its embedding;
  // nothing is sampled. Mean pooling needs every token's hidden state, so those requests reuse
  // no cached prefix (last-token pooling does, as generation does).
  PoolerConfig pooler;
  // Speculative decoding (--speculative-algorithm): a decoding request whose tokens are all
  // known (no batch of it in flight) verifies its drafts in one extend pass.
  speculative::SpeculativeOptions speculative;
  // --enable-priority-scheduling and its flags (fcfs and lof only, as in SGLang).
  PriorityOptions priority;
  // Tokens of a decode batch with drafts, at most (each token is a logits row then): what the
  // runner reserved (its max_num_tokens and logits rows); 0 = no bound. Drafts beyond it wait.
  int64_t max_verify_tokens = 0;

  // SGLang's new_token_ratio schedule, derived from schedule_conservativeness.
  double init_new_token_ratio() const;
  double min_new_token_ratio() const;
  double new_token_ratio_decay() const;  // per decode step
};

// Budgets never assume more than this many new tokens per request (SGLang's
// CLIP_MAX_NEW_TOKENS_ESTIMATION).
constexpr int64_t kClipMaxNewTokens = 4096;
// lpm falls back to fcfs above this many waiting requests (matching is O(waiting)).
constexpr size_t kLpmFallbackQueueSize = 128;
// In-batch prefix caching: a request with a cached prefix shorter than this that shares at least
// this many cacheable tokens with a request admitted earlier in the same round waits one round
// (Scheduler::waits_for_in_batch_prefix).
constexpr int64_t kInBatchPrefixThreshold = 32;

}  // namespace sgl::scheduler
