// Req: one request's state through WAITING -> (CHUNKED)* -> EXTEND -> DECODE -> FINISHED, with
// RETRACTED back to waiting (SGLang's Req).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/radix_cache.h"
#include "grammar/compiled_grammar.h"
#include "grammar/reasoner_matcher.h"
#include "sampling/prompt_logprobs.h"
#include "sampling/sampler.h"
#include "sampling/sampling_params.h"
#include "scheduler/pooled_embedding.h"
#include "scheduler/position_rows.h"
#include "scheduler/spec_decode_stats.h"

namespace sgl::scheduler {

enum class FinishReason {
  kLength,      // max_new_tokens reached (or the context filled up)
  kStop,        // EOS or a stop_token_id
  kStopString,  // a stop string matched (reported by the text layer)
  kAbort,       // aborted: by the client, a timeout, or an error
};

const char* finish_reason_name(FinishReason reason);  // "length", "stop", "stop", "abort"

// The status of an abort the server decided for want of capacity or time (HTTP's 503).
inline constexpr int32_t kServiceUnavailable = 503;

struct FinishState {
  FinishReason reason = FinishReason::kLength;
  int32_t matched_token = -1;  // the stop token, for kStop
  std::string message;         // why, for kAbort
  // kAbort: the HTTP status of an abort the server decided (SGLang's FINISH_ABORT status_code:
  // 503 for a timeout, a full queue or shutdown), which routes answer as an error; 0 for one
  // the client asked for, answered as a finished reply.
  int32_t status_code = 0;
};

// What a client asks for, in token ids.
struct GenerateRequest {
  std::vector<int32_t> input_ids;
  sampling::SamplingParams sampling;
  int32_t max_new_tokens = 128;
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;  // stop on these as well as the model's EOS ids
  bool return_logprob = false;          // logprob of each sampled token
  int32_t top_logprobs_num = 0;         // > 0: also the top-k at each step
  // With return_logprob, prompt logprobs from this prompt position on (SGLang's
  // logprob_start_len); -1: none. The logits at positions [start, prompt_len - 1) score the
  // prompt token after each; cached prefix tokens have no logits, so the radix cache match stops
  // at `start`. With max_new_tokens 0 the request only scores its prompt.
  int32_t logprob_start_len = -1;
  // With return_logprob, SGLang's token_ids_logprob: each generated position's (and each scored
  // prompt position's) logprobs of these ids, in this order (repeats allowed), of the same
  // distribution as the sampled token's logprob. At most sampling::kMaxTokenIdsLogprob ids, each
  // in the vocabulary (the engine checks). Empty: none.
  std::vector<int32_t> token_ids_logprob = {};
  // Structured output: every generated token is one the grammar allows, and a stop token only
  // where it can end (compiled for the served model's vocabulary). Null: unconstrained.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // With a grammar: the reasoning it waits for (SGLang's require_reasoning); empty: none. With a
  // budget (grammar or not), the reasoning's closing tokens are forced once it is spent
  // (SGLang's max_thinking_tokens).
  grammar::ReasoningGate reasoning_gate = {};
  // The prefix cache namespace (SGLang's extra_key and cache_salt, one string): requests share
  // cached KV only with requests of the same namespace. Empty: the default, shared one.
  std::string cache_namespace;
  // SGLang's priority (with --enable-priority-scheduling; larger first unless
  // --schedule-low-priority-values-first). None: --default-priority-value, else the least.
  std::optional<int64_t> priority;
  // SGLang's return_hidden_states: the final norm's output (the LM head's input) at every
  // position the model computes for the request, prompt and outputs (all but the last output,
  // never fed back), in position order (ReqUpdate::new_hidden_states). The radix cache serves
  // such a request only positions already reported, so its first prefill computes the whole
  // prompt; with speculative decoding it decodes without drafts.
  bool return_hidden_states = false;
  // SGLang's return_routed_experts (with --enable-return-routed-experts, a MoE model): each MoE
  // layer's top-k expert ids at every position, as return_hidden_states' positions
  // (ReqUpdate::new_routed_experts), with the same radix cache and drafting rules.
  bool return_routed_experts = false;
  // The LoRA adapter the request runs with (SGLang's lora_path, resolved to the engine's
  // adapters: EngineOptions::lora_cache_keys): 0 none, i the i-th. Its KV is the adapter's, so
  // the radix cache keeps each adapter's prefixes apart (the engine's namespace for it).
  int32_t lora_id = 0;
  // Kept as long as the request is (the server's LoraRegistry lease): an adapter is unloaded
  // only once no request the scheduler holds still runs with it.
  std::shared_ptr<const void> lora_lease;

  // Whether the request reports per-position outputs (hidden states or routed experts).
  bool reports_positions() const { return return_hidden_states || return_routed_experts; }
  // How many prompt tokens get a logprob (positions start + 1 .. prompt_len - 1).
  int32_t input_logprob_count() const;
};

using Clock = std::chrono::steady_clock;

struct Req {
  uint64_t rid = 0;
  GenerateRequest request;  // origin_input_ids = request.input_ids
  std::vector<int32_t> output_ids;
  std::vector<float> output_logprobs;
  std::vector<std::vector<sampling::TokenLogprob>> output_top_logprobs;
  std::vector<std::vector<float>> output_token_ids_logprobs;  // per step, with token_ids_logprob
  std::optional<FinishState> finished;

  // Scheduling state.
  std::vector<int32_t> fill_ids;        // the tokens the KV must hold after this extend
  std::vector<int32_t> prefix_indices;  // KV slots of fill_ids' cached prefix (tree's slots)
  int32_t extend_input_len = 0;         // tokens this extend computes
  int32_t req_pool_idx = -1;            // row in the ReqToTokenPool; -1 = none
  cache::RadixLock lock;                // pins prefix_indices (last_node = lock.node())
  int32_t kv_len = 0;                   // positions with KV slots in the row (scheduled)
  int32_t borrowed_len = 0;             // row[0:borrowed_len] are the tree's slots
  int32_t scheduled_samples = 0;        // tokens sampled once every in-flight batch is done
  bool is_chunked = false;              // a prefill chunk is in progress
  bool prefill_cached = false;          // its prompt's KV was published to the radix cache
  // EAGLE: a plain decode batch ran without the draft (ScheduleBatch::skip_draft), so the
  // draft's state no longer follows the request: it decodes plainly until a new prefill.
  bool draft_stale = false;
  int32_t draft_valid_len = 0;  // draft_stale: positions [0, this) have the draft's KV
  int32_t cached_tokens = 0;    // prompt tokens served from the cache at first prefill
  int32_t retract_count = 0;
  sampling::PromptLogprobs input_logprobs;  // gathered chunk by chunk until the prefill ends
  PooledEmbedding embedding;                // an embedding model's: pooled chunk by chunk
  // request.grammar's (and the thinking budget's) state after output_ids (SGLang's req.grammar);
  // null when unconstrained.
  std::unique_ptr<grammar::ReasonerGrammarMatcher> grammar;
  bool input_logprobs_sent = false;  // delivered with the first token (or the finish)
  // return_hidden_states: f32 [rows, hidden]; return_routed_experts: i32 [rows, MoE layers,
  // top_k].
  PositionRows<float> hidden_states;
  PositionRows<int32_t> routed_experts;
  SpecDecodeStats spec;        // its speculative decoding so far (ReqUpdate::spec)
  int64_t last_batch_id = -1;  // newest batch that reads this request's row
  Clock::time_point arrival_time = Clock::now();
  int64_t priority = 0;  // request.priority resolved (PriorityOptions::resolve)
  std::optional<Clock::time_point> first_schedule_time;

  const std::vector<int32_t>& origin_input_ids() const { return request.input_ids; }
  // Tokens remain to be scheduled (max_new_tokens not reached by what is scheduled).
  bool decodes_more() const { return scheduled_samples < request.max_new_tokens; }
  // origin_input_ids + output_ids
  std::vector<int32_t> all_token_ids() const;
  int32_t prompt_len() const { return static_cast<int32_t>(request.input_ids.size()); }
  // Prompt logprobs are asked for and not yet delivered.
  // The ids whose logprobs each step reports (none without return_logprob).
  bool wants_token_ids_logprobs() const {
    return request.return_logprob && !request.token_ids_logprob.empty();
  }
  bool wants_input_logprobs() const {
    return !input_logprobs_sent && request.input_logprob_count() > 0;
  }
};

}  // namespace sgl::scheduler
