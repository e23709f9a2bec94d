// Scheduler: SGLang's event-loop brain on the host. Owns the waiting queue, the running set and
// the KV metadata (ReqToTokenPool, TokenToKvPoolAllocator, RadixCache); decides each batch
// (prefill first, else decode, retracting when KV runs out); applies each batch's sampled
// tokens. No CUDA dependency: the engine turns ScheduleBatches into device work.
#pragma once

#include <deque>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "cache/radix_cache.h"
#include "cache/req_to_token_pool.h"
#include "cache/token_to_kv_pool_allocator.h"
#include "scheduler/prefill_adder.h"
#include "scheduler/req.h"
#include "scheduler/schedule_batch.h"
#include "scheduler/scheduler_options.h"
#include "speculative/draft_length_policy.h"

namespace sgl::scheduler {

// What a request gained since the last update: new tokens (with logprobs) and/or its finish.
struct ReqUpdate {
  uint64_t rid = 0;
  std::vector<int32_t> new_token_ids;
  std::vector<float> new_logprobs;                                    // when return_logprob
  std::vector<std::vector<sampling::TokenLogprob>> new_top_logprobs;  // when top_logprobs_num
  // Per new token, the logprobs of GenerateRequest::token_ids_logprob (when asked).
  std::vector<std::vector<float>> new_token_ids_logprobs = {};
  std::optional<sampling::PromptLogprobs> input_logprobs;  // once, when the prefill completes
  std::optional<FinishState> finished;  // with the last new token, when a token ended it
  std::vector<float> embedding;         // f32 [hidden]: an embedding request's, with its finish
  // GenerateRequest::return_hidden_states: the positions' hidden states since the last update,
  // f32 [rows, hidden] row-major, in position order.
  std::vector<float> new_hidden_states = {};
  // GenerateRequest::return_routed_experts: the positions' expert ids since the last update,
  // i32 [rows, MoE layers, top_k], in position order.
  std::vector<int32_t> new_routed_experts = {};
  SpecDecodeStats spec = {};  // Req::spec, after a verify step (else empty: unchanged)
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;
  int32_t retractions = 0;  // times the request was retracted to free KV (SGLang's num_retractions)
};

struct SchedulerStats {
  int64_t num_running = 0;
  int64_t num_waiting = 0;
  int64_t num_retracted_total = 0;  // retractions since start
  int64_t num_preempted_total = 0;  // of those, for a waiting request of a preferred priority
  int64_t kv_capacity = 0;          // allocatable KV slots
  int64_t kv_used = 0;              // held by requests or the cache
  int64_t kv_cached = 0;            // held by the radix cache
  int64_t kv_evictable = 0;         // of those, held by no request (freed on demand)
  int64_t waiting_tokens = 0;       // the waiting requests' tokens (prompt and output so far)
  int64_t prompt_tokens_total = 0;  // over first prefills
  int64_t cached_prompt_tokens_total = 0;
  int64_t computed_tokens_total = 0;  // tokens run through the model (prefill + decode)
  int64_t generated_tokens_total = 0;
  int64_t finished_requests_total = 0;
  int64_t spec_verify_steps = 0;     // speculative verify entries processed
  int64_t spec_draft_tokens = 0;     // drafts they checked
  int64_t spec_accepted_tokens = 0;  // drafts accepted (each a token gained for free)
  // Requests speculation leaves out (a grammar, penalties or logit_bias: one logits row a step;
  // a thinking budget only while a draft could reach its forced close).
  int64_t spec_plain_requests = 0;
  double new_token_ratio = 0;
  double cache_hit_rate() const {
    return prompt_tokens_total ? static_cast<double>(cached_prompt_tokens_total) /
                                     static_cast<double>(prompt_tokens_total)
                               : 0.0;
  }
  // Tokens a verify step yields on average, the sampled one included (SGLang's
  // avg_spec_accept_length); 0 before the first.
  double spec_accept_length() const {
    return spec_verify_steps ? 1.0 + static_cast<double>(spec_accepted_tokens) /
                                         static_cast<double>(spec_verify_steps)
                             : 0.0;
  }
  // KV slots that requests hold, the cache's locked prefixes included; the evictable cache
  // counts as free, as SGLang's num_used_tokens / token_usage count it.
  int64_t kv_in_use() const { return kv_used - kv_evictable; }
  double kv_usage() const {
    return kv_capacity ? static_cast<double>(kv_in_use()) / static_cast<double>(kv_capacity) : 0.0;
  }
};

struct NextBatch {
  std::optional<ScheduleBatch> batch;
  // The scheduler must retract, and retraction frees memory in-flight batches still read:
  // the caller must finish (process) every in-flight batch, then ask again.
  bool need_drain = false;
};

class Scheduler {
 public:
  // vocab_size: the logits' width (the masks that force a thinking budget's closing tokens).
  Scheduler(const SchedulerOptions& options, int32_t num_kv_slots, int32_t max_context_len,
            std::vector<int32_t> eos_token_ids, int64_t vocab_size);
  ~Scheduler();

  // Checks the request against the context and the limits; the reason as a Status.
  Status validate(const GenerateRequest& request) const;
  // Queues a validated request. Returns false (and queues nothing) when max_queued_requests
  // (> 0) plus max_running_requests are already waiting or running.
  bool add_request(uint64_t rid, GenerateRequest request);
  // Aborts a waiting or running request (no-op for unknown ids); its update says abort, with
  // `status_code` (FinishState's: 0 for the client's own abort).
  void abort(uint64_t rid, const std::string& message, int32_t status_code = 0);
  // Frees everything the radix cache holds; false while requests are running or in flight, or
  // wait (unless `ignore_waiting`: a paused engine's queue, which holds no KV).
  bool flush_cache(bool ignore_waiting = false);
  // Every running request (and one part way through a chunked prefill) back to the front of the
  // waiting queue, in order, its KV released into the radix cache, to be recomputed when it is
  // scheduled again (SGLang's pause_generation mode retract). No batch may be in flight.
  void retract_all();

  // The next batch: a prefill (maybe MIXED with the running decodes), else a decode of every
  // running request. In the overlap loop the previous batch may still be running; a request
  // that finished there is dropped once its result is processed.
  NextBatch get_next_batch_to_run();
  // Applies a batch's sampled tokens (BatchEntry::sample_rows() rows per entry, in batch order:
  // one, or a verify entry's 1 + drafts), the prompt logprobs of the entries that asked (one
  // per entry, or none), the hidden states of those that asked (one per entry, f32
  // [extend_len, hidden] or empty; or none) and their routed experts (one per entry, i32
  // [extend_len, MoE layers, top_k] or empty; or none).
  void process_batch_result(const ScheduleBatch& batch, const sampling::SampleOutput& output,
                            std::span<const sampling::PromptLogprobs> prompt_logprobs = {},
                            std::span<const std::vector<float>> hidden_states = {},
                            std::span<const std::vector<int32_t>> routed_experts = {});
  // A pooling batch's result (batch.pooling set): `embeddings` f32 [entries, hidden], row i the
  // model's pooling of entry i's tokens. A request whose last chunk this was ends with its
  // embedding (finish reason length, as SGLang's).
  void process_embedding_result(const ScheduleBatch& batch, std::span<const float> embeddings);

  // Moves the updates accumulated since the last call (the engine streams them to clients) into
  // `*out`, replacing its contents. The two vectors trade storage, so a caller that keeps its
  // vector between calls makes no allocation here in steady state.
  void take_updates(std::vector<ReqUpdate>* out);
  SchedulerStats stats() const;
  // KV slots conserved (free + cached + held by requests == capacity), pools consistent.
  Status check_integrity() const;
  // The table of KV slots per request row (engine thread only). The model side keeps its own
  // copy, updated from each batch's req_to_token_writes.
  const cache::ReqToTokenPool& req_to_token_pool() const { return req_to_token_; }
  bool idle() const { return running_.empty() && waiting_.empty() && chunked_req_ == nullptr; }
  bool is_embedding() const { return options_.pooler.is_embedding(); }
  // --speculative-draft-policy adaptive: the engine's wall time of decode batch `batch_id`
  // (its processing included), the draft length policy's step time for the draft count it ran
  // (the verifies' accepted counts reach it as their results are processed). Other batches'
  // times are ignored.
  void record_decode_time(int64_t batch_id, double seconds);
  int64_t in_flight_batches() const { return next_batch_id_ - 1 - last_processed_batch_id_; }

 private:
  // Admission (scheduler_prefill.cpp).
  std::optional<ScheduleBatch> get_new_batch_prefill();
  void init_next_round_input(Req& req);
  // How much of `req`'s fill_ids the radix cache may serve (prompt logprobs and mean pooling
  // need their tokens computed).
  size_t cache_key_length(const Req& req) const;
  // Whether `req` waits a round for a request `admitted` this round to cache the prefix they
  // share (kInBatchPrefixThreshold tokens the cache could serve it): any shared prefix under
  // the cache-aware policies (SGLang's in-batch prefix caching, `any_shared_prefix`), the same
  // prompt under every policy (n > 1 samples, which SGLang primes with one prefill first).
  bool waits_for_in_batch_prefix(const Req& req, std::span<Req* const> admitted,
                                 bool any_shared_prefix) const;
  // Fills `entry` and appends its new KV slots to `out_cache_loc` (the batch's); false (nothing
  // allocated) when the KV cache is out of slots.
  bool prepare_extend_entry(Req& req, BatchEntry* entry, std::vector<int32_t>* out_cache_loc);

  // Priority scheduling (scheduler_priority.cpp).
  // The running requests the waiting `req` (turned away by `adder`: no running slot or no KV)
  // may preempt to be admitted (SGLang's preempt_to_schedule): those it outranks by more than
  // the threshold, least preferred (then newest) first, until the KV they hold and reserve
  // covers what `req` lacks and a running slot is free. Empty when they cannot make the room.
  std::vector<Req*> preemption_victims(const Req& req, const PrefillAdder& adder) const;
  // Retracts `victims` (the caller puts them back in the waiting queue; recomputed later) and
  // gives `adder` their running slots and reservations. No batch may be in flight.
  void preempt(std::span<Req* const> victims, PrefillAdder& adder);
  // A full waiting queue and a request of priority `priority`: the waiting request it outranks
  // that goes (the least preferred, then newest), aborted; false when it outranks none.
  bool evict_for_priority(int64_t priority);

  // Decoding (scheduler_decode.cpp).
  std::optional<ScheduleBatch> get_decode_batch(bool* need_drain);
  // Appends one decode token of the running `req` to `batch` (its slot must be available).
  void add_decode_entry(Req& req, ScheduleBatch& batch);
  void retract_for_decode(int64_t needed);
  // Releases the running `req`'s KV and queues it first in the waiting queue (the caller takes
  // it out of the running set).
  void retract(Req& req);
  // retract() but for the queueing: the caller puts `req` back in the waiting queue.
  void unschedule(Req& req);
  int64_t reserved_decode_tokens() const;
  // The future tokens the running `req` is reserved (its share of reserved_decode_tokens).
  double reserved_tokens(const Req& req) const;

  // Speculative decoding (scheduler_speculative.cpp).
  // How many drafts `req` may verify in a decode step (at most `budget`) once its last token is
  // on the host: 0 for requests that decode plainly (grammar, logit processing, a stale EAGLE
  // draft) and at the end of max_new_tokens or of the context.
  int32_t draft_room(const Req& req, int32_t budget) const;
  // draft_room now: 0 while `req` has a batch in flight (its last token is not on the host).
  int32_t drafts_allowed_now(const Req& req, int32_t budget) const;
  // A request that would draft (at most `budget`) has a batch in flight: under the overlap loop
  // the engine drains before the next decode step, which can then verify drafts.
  bool drafts_wait_for_results(int32_t budget) const;
  // The drafts `req` may verify in this decode step, at most `budget`: n-gram lookups, or
  // EAGLE's placeholders for the runner to fill (empty: a plain decode).
  std::vector<int32_t> drafts_for(const Req& req, int32_t budget) const;
  // [running_.size()]: each running request's drafts for a decode step of `needed` requests
  // (cut to max_verify_tokens; none if the KV cache cannot hold them all); empty without
  // speculation.
  std::vector<std::vector<int32_t>> plan_drafts(int64_t needed, int32_t budget) const;
  // The adaptive policy's part of decode `batch` (`verify`: it has verify entries), whose
  // choice was `drafts` (`exploring`: to be measured): skipping the EAGLE draft where plain
  // decoding is chosen as best, and what record_decode_time times.
  void follow_draft_policy(int32_t drafts, bool exploring, bool verify, ScheduleBatch& batch);
  // Appends `req`'s verify entry: its last token and `drafts` (their slots must be available).
  void add_verify_entry(Req& req, std::vector<int32_t> drafts, ScheduleBatch& batch);
  // Keeps the KV of a verify entry's accepted positions (a tree's accepted path, remapped to
  // follow the root) and frees the rest; returns the entry's result rows that hold its next
  // tokens (`sampled`'s: the root's, then each accepted node's).
  std::vector<int32_t> accept_drafts(Req& req, const BatchEntry& entry,
                                     std::span<const int32_t> sampled);

  // Results, finishing and release (scheduler_output_processor.cpp).
  // Why `req` stops after appending `token` to its output, if it does.
  std::optional<FinishState> stop_condition(const Req& req, int32_t token) const;
  void finish(Req& req, FinishState state);
  void cache_unfinished(Req& req);
  // How many of the request's first positions may go into the radix cache (EAGLE: not those
  // its draft never saw).
  int32_t draft_cacheable_len(const Req& req) const;
  void release(Req& req);
  void release_ready();

  // Requests, KV slots and grammar masks (scheduler.cpp).
  // `n` KV slots (alloc_slot: one), evicting from the radix cache when the allocator runs short.
  std::optional<std::vector<int32_t>> alloc_slots(int32_t n);
  std::optional<int32_t> alloc_slot();
  void handle_timeouts();
  void emit(const Req& req, ReqUpdate update);
  Req* find(uint64_t rid);
  // Gives `batch` a grammar mask future when an entry that samples is constrained.
  void plan_vocab_mask(ScheduleBatch& batch);
  // Computes the masks of every planned batch whose batch before has been processed (each
  // matcher then holds every token before it).
  void fill_ready_masks();

  SchedulerOptions options_;
  int32_t max_context_len_;
  std::vector<int32_t> eos_token_ids_;
  int64_t vocab_size_;
  cache::ReqToTokenPool req_to_token_;
  cache::TokenToKvPoolAllocator allocator_;
  cache::RadixCache tree_;
  std::mt19937_64 rng_;

  std::map<uint64_t, std::unique_ptr<Req>> reqs_;  // every live request, by rid
  std::deque<Req*> waiting_;
  std::vector<Req*> running_;  // decoding (an embedding request ends with its prefill instead)
  Req* chunked_req_ = nullptr;
  std::vector<Req*> to_release_;  // finished; released once no in-flight batch reads them
  double new_token_ratio_;
  int64_t next_batch_id_ = 1;
  int64_t last_processed_batch_id_ = 0;
  std::vector<ReqUpdate> updates_;
  SchedulerStats totals_;
  // --speculative-draft-policy adaptive (null otherwise), and the decode batches it chose for,
  // until their times are recorded.
  std::unique_ptr<speculative::DraftLengthPolicy> draft_policy_;
  // The policy's choice that asked for a drain, taken by the next decode batch of its size.
  struct DrainedChoice {
    speculative::DraftLengthPolicy::Choice choice;
    int64_t batch_size = 0;  // the decode batch it was chosen for
  };
  std::optional<DrainedChoice> drained_choice_;
  bool logged_spec_plain_ = false;  // the first request speculation leaves out was logged
  // A preemption waits for the batches in flight (they read the victims' KV): the next batch is
  // a drain.
  bool drain_for_preemption_ = false;
  struct PolicyStep {
    int64_t batch_id = -1;
    int32_t batch_size = 0;
    int32_t drafts = 0;  // the count chosen (0: nothing verified)
  };
  std::deque<PolicyStep> policy_steps_;  // the chosen decode batches in flight, oldest first
  // A batch entry whose sampled rows take grammar masks.
  struct MaskedEntry {
    int32_t first_row = 0;  // the entry's first sampled row in the batch
    Req* req = nullptr;     // constrained
    // A verify entry's drafts its grammar checked (drafts_for): one more row each, masked as
    // the grammar stands after the drafts before it. Empty: the first row alone.
    std::vector<int32_t> drafts;
  };
  struct PendingMask {
    int64_t batch_id = 0;
    std::vector<MaskedEntry> rows;
    std::promise<sampling::VocabMask> promise;
  };
  // Grammar masks promised to batches in flight, oldest first.
  std::deque<PendingMask> pending_masks_;
};

}  // namespace sgl::scheduler
