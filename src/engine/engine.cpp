// The engine loop: inbox -> schedule -> launch -> process results -> stream updates.
#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <random>

#include "core/logging.h"
#include "engine/exec_batch.h"
#include "kernels/sampling_math.h"

namespace sgl::engine {
namespace {

// "batch 12 mixed: 3 prefill (+1024 tokens), 250 decode": one line a batch at debug level,
// to see from the log when prefills run and how large they are.
std::string describe_batch(const scheduler::ScheduleBatch& batch) {
  int64_t prefill = 0, prefill_tokens = 0, decode = 0;
  for (const scheduler::BatchEntry& e : batch.entries) {
    const bool is_decode = e.decodes();
    decode += is_decode ? 1 : 0;
    prefill += is_decode ? 0 : 1;
    prefill_tokens += is_decode ? 0 : e.extend_len;
  }
  return "batch " + std::to_string(batch.id) + " " + forward_mode_name(batch.mode) + ": " +
         std::to_string(prefill) + " prefill (+" + std::to_string(prefill_tokens) + " tokens), " +
         std::to_string(decode) + " decode";
}

// SGLang's status lines (its scheduler's wording, which operators grep for).
std::string prefill_status(const scheduler::ScheduleBatch& batch,
                           const scheduler::SchedulerStats& s) {
  int64_t seqs = 0, tokens = 0;
  for (const scheduler::BatchEntry& e : batch.entries) {
    if (e.decodes()) continue;  // a decode riding along
    ++seqs;
    tokens += e.extend_len;
  }
  char usage[16];
  std::snprintf(usage, sizeof usage, "%.2f", s.kv_usage());
  return "Prefill batch. #new-seq: " + std::to_string(seqs) +
         ", #new-token: " + std::to_string(tokens) + ", token usage: " + usage +
         ", #running-req: " + std::to_string(s.num_running) +
         ", #queue-req: " + std::to_string(s.num_waiting);
}

std::string decode_status(const EngineStats& stats) {
  const scheduler::SchedulerStats& s = stats.scheduler;
  char numbers[64];
  std::snprintf(numbers, sizeof numbers, "token usage: %.2f, gen throughput (token/s): %.2f",
                s.kv_usage(), stats.generation_throughput);
  std::string accept;
  if (s.spec_verify_steps > 0) {
    char text[32];
    std::snprintf(text, sizeof text, ", accept len: %.2f", s.spec_accept_length());
    accept = text;
  }
  return "Decode batch. #running-req: " + std::to_string(s.num_running) +
         ", #token: " + std::to_string(s.kv_in_use()) + ", " + numbers + accept +
         ", #queue-req: " + std::to_string(s.num_waiting);
}

// A launched batch as its trace events describe it (only built while profiling).
ProfiledBatch profiled_batch(const scheduler::ScheduleBatch& batch,
                             const scheduler::SchedulerStats& s) {
  ProfiledBatch p;
  p.id = batch.id;
  p.mode = forward_mode_name(batch.mode);
  p.requests = static_cast<int64_t>(batch.entries.size());
  for (const scheduler::BatchEntry& e : batch.entries) {
    p.tokens += e.extend_len;
    if (e.decodes()) continue;
    ++p.prefill_requests;
    p.cached_tokens += e.prefix_len;
  }
  p.prefill = p.prefill_requests > 0;
  p.running = s.num_running;
  p.waiting = s.num_waiting;
  p.kv_in_use = s.kv_in_use();
  return p;
}

double to_us(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
}

constexpr std::chrono::milliseconds kWaitForever = std::chrono::hours(24 * 365);
// generation_throughput: measured every this many decode steps when decode_log_interval is 0
// (no logs; SGLang's default interval), and reported as 0 once no interval has ended for this
// long (SGLang's GEN_THROUGHPUT_STALENESS_SECONDS).
constexpr int64_t kThroughputIntervalSteps = 40;
constexpr double kThroughputStaleS = 30.0;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// EAGLE: the scheduler's verify entries carry placeholder drafts; the runner's result says
// which ids it drafted there, and acceptance reads those.
void adopt_runner_drafts(const runner::ExecResult& result, scheduler::ScheduleBatch& batch) {
  if (result.draft_ids.empty()) return;
  SGL_CHECK_EQ(result.draft_ids.size(), batch.entries.size());
  SGL_CHECK(result.draft_parents.empty() || result.draft_parents.size() == batch.entries.size());
  for (size_t i = 0; i < result.draft_ids.size(); ++i) {
    std::vector<int32_t>& placeholders = batch.entries[i].draft_ids;
    SGL_CHECK_EQ(result.draft_ids[i].size(), placeholders.size()) << "drafts for request " << i;
    placeholders = result.draft_ids[i];
    if (!result.draft_parents.empty()) batch.entries[i].draft_parents = result.draft_parents[i];
  }
}

// A request's reasoning gate: empty, or waiting for closing ids inside the vocabulary in front
// of a grammar or a thinking budget, whose forced tokens end with those ids.
Status check_reasoning_gate(const grammar::ReasoningGate& gate, bool has_grammar,
                            int64_t vocab_size) {
  const auto in_vocab = [&](int32_t id) { return id >= 0 && id < vocab_size; };
  const auto all_in_vocab = [&](const std::vector<int32_t>& ids) {
    return std::all_of(ids.begin(), ids.end(), in_vocab);
  };
  if (gate.max_tokens < -1) return invalid_argument("a thinking budget is -1 (none) or >= 0");
  if (gate.empty()) {
    if (gate.has_budget()) return invalid_argument("a thinking budget needs closing ids");
    return Status::ok_status();
  }
  if ((!has_grammar && !gate.has_budget()) || !all_in_vocab(gate.end_ids) ||
      (gate.start_id != -1 && !in_vocab(gate.start_id))) {
    return invalid_argument(
        "a reasoning gate needs a grammar or a budget, and token ids inside the vocabulary");
  }
  const std::vector<int32_t>& forced = gate.budget_end_ids;
  if (gate.has_budget() &&
      (forced.size() < gate.end_ids.size() || !all_in_vocab(forced) ||
       !std::equal(gate.end_ids.rbegin(), gate.end_ids.rend(), forced.rbegin()))) {
    return invalid_argument(
        "a thinking budget's forced tokens are in the vocabulary and end with the closing ids");
  }
  return Status::ok_status();
}

}  // namespace

Engine::Engine(const EngineOptions& options)
    : options_(options),
      scheduler_(std::make_unique<scheduler::Scheduler>(options.scheduler, options.num_kv_slots,
                                                        options.context_length,
                                                        options.eos_token_ids, options.vocab_size)),
      next_rid_(options.first_rid),
      lora_keys_(options.lora_cache_keys),
      profiler_(options.device_profiler_capture) {
  SGL_CHECK(options.first_rid >= 1 && options.rid_stride >= 1) << "rid 0 names no request";
}

Engine::~Engine() {
  watchdog_.reset();
  soft_watchdog_.reset();
  {
    std::lock_guard lock(inbox_mutex_);
    stopping_ = true;
  }
  inbox_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

const cache::ReqToTokenPool& Engine::req_to_token_pool() const {
  return scheduler_->req_to_token_pool();
}

void Engine::start(std::unique_ptr<runner::BatchRunner> runner) {
  SGL_CHECK(!thread_.joinable()) << "engine already started";
  runner_ = std::move(runner);
  auto watch = [this](double timeout_s, bool soft) -> std::unique_ptr<Watchdog> {
    if (timeout_s <= 0) return nullptr;
    std::function<void()> on_timeout;
    if (!soft) {
      on_timeout = options_.on_watchdog_timeout;
      if (!on_timeout) {
        on_timeout = [] {
          SGL_LOG_ERROR << "the watchdog ends the server (exit status 1)";
          std::fflush(stderr);
          std::_Exit(EXIT_FAILURE);
        };
      }
    }
    return std::make_unique<Watchdog>(WatchdogOptions{
        .name = "Scheduler",
        .timeout_s = timeout_s,
        .soft = soft,
        .progress = [this] { return watchdog_progress(); },
        .dump_info = [this] { return watchdog_info(); },
        .on_timeout = std::move(on_timeout),
    });
  };
  watchdog_ = watch(options_.watchdog_timeout_s, false);
  soft_watchdog_ = watch(options_.soft_watchdog_timeout_s, true);
  thread_ = std::thread([this] { loop(*runner_); });
}

WatchdogProgress Engine::watchdog_progress() const {
  return {.counter = steps_processed_.load(), .active = batch_pending_.load()};
}

std::string Engine::watchdog_info() const {
  std::lock_guard lock(watched_batch_mutex_);
  const WatchedBatch& b = watched_batch_;
  std::string text = "the latest batch launched: batch " + std::to_string(b.id) + " " +
                     forward_mode_name(b.mode) + ", " + std::to_string(b.rids.size()) +
                     " requests, " + std::to_string(b.num_tokens) + " tokens; request ids";
  for (const uint64_t rid : b.rids) text += " " + std::to_string(rid);
  return text + "; batches processed: " + std::to_string(steps_processed_.load());
}

void Engine::set_lora_adapter(int32_t id, std::string key) {
  SGL_CHECK(id >= 1) << "LoRA adapter id " << id;
  std::lock_guard lock(lora_mutex_);
  if (lora_keys_.size() < static_cast<size_t>(id)) lora_keys_.resize(static_cast<size_t>(id));
  lora_keys_[static_cast<size_t>(id - 1)] = std::move(key);
}

Result<std::shared_ptr<RequestStream>> Engine::submit(GenerateRequest request) {
  if (is_embedding()) {
    return invalid_argument(
        "the model is served as an embedding model (--is-embedding): it encodes prompts and "
        "generates nothing");
  }
  return enqueue(std::move(request));
}

Result<std::shared_ptr<RequestStream>> Engine::encode(std::vector<int32_t> input_ids,
                                                      std::optional<int64_t> priority) {
  if (!is_embedding()) {
    // SGLang's words for the same mistake.
    return invalid_argument(
        "This model does not appear to be an embedding model by default. Please add "
        "`--is-embedding` when launching the server or try another model.");
  }
  GenerateRequest request;
  request.input_ids = std::move(input_ids);
  request.max_new_tokens = 0;
  request.priority = priority;
  return enqueue(std::move(request));
}

Result<std::shared_ptr<RequestStream>> Engine::enqueue(GenerateRequest request) {
  SGL_RETURN_IF_ERROR(scheduler_->validate(request));  // reads only immutable limits
  for (int32_t id : request.input_ids) {
    if (id < 0 || id >= options_.vocab_size) {
      return invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                              std::to_string(options_.vocab_size) + ")");
    }
  }
  if (request.return_routed_experts && !options_.return_routed_experts) {
    return invalid_argument(
        "return_routed_experts needs a Mixture-of-Experts model served with "
        "--enable-return-routed-experts");
  }
  if (request.lora_id != 0) {
    std::string key;
    {
      std::lock_guard lock(lora_mutex_);
      if (request.lora_id > 0 && static_cast<size_t>(request.lora_id) <= lora_keys_.size()) {
        key = lora_keys_[static_cast<size_t>(request.lora_id - 1)];
      }
    }
    if (key.empty()) {
      return invalid_argument("LoRA adapter " + std::to_string(request.lora_id) + " is not loaded");
    }
    // An adapter's KV is its own: its prefixes are cached apart, in a namespace no server key
    // spells (those start with a digit: server/openai_json's cache_namespace_key).
    request.cache_namespace = "\x01lora " + key + "\x01" + request.cache_namespace;
  }
  for (int32_t id : request.token_ids_logprob) {
    if (id >= options_.vocab_size) {
      return invalid_argument("token_ids_logprob: token id " + std::to_string(id) +
                              " is outside the vocabulary [0, " +
                              std::to_string(options_.vocab_size) + ")");
    }
  }
  for (const sampling::LogitBias& b : request.sampling.logit_bias) {
    if (b.id >= options_.vocab_size) {
      return invalid_argument("logit_bias: token id " + std::to_string(b.id) +
                              " is outside the vocabulary [0, " +
                              std::to_string(options_.vocab_size) + ")");
    }
  }
  if (request.grammar && request.grammar->tokenizer().vocab_size() != options_.vocab_size) {
    return invalid_argument("the grammar was compiled for a vocabulary of " +
                            std::to_string(request.grammar->tokenizer().vocab_size()) +
                            " tokens; the model's has " + std::to_string(options_.vocab_size));
  }
  SGL_RETURN_IF_ERROR(check_reasoning_gate(request.reasoning_gate, request.grammar != nullptr,
                                           options_.vocab_size));
  const auto prompt = static_cast<int64_t>(request.input_ids.size());
  // Without chunking a prompt is prefilled whole, beside the running decodes (MIXED): it must
  // fit the forward's tokens less theirs.
  const int64_t whole_prefill = options_.max_num_tokens - options_.scheduler.max_running_requests;
  if (options_.scheduler.chunked_prefill_size <= 0 && prompt > whole_prefill) {
    return invalid_argument("the prompt has " + std::to_string(prompt) +
                            " tokens; without chunked prefill one forward takes at most " +
                            std::to_string(whole_prefill) + " (--max-prefill-tokens)");
  }
  const int64_t limit = options_.scheduler.max_queued_requests;
  // Counted first, so that concurrent submits cannot all pass the check (the scheduler's own
  // count would then abort the extras instead of the caller getting this retryable error).
  // With priority scheduling the scheduler decides: a preferred newcomer takes the place of the
  // least preferred waiting request.
  const int64_t queued = ++queued_;
  if (limit > 0 && !options_.scheduler.priority.enabled &&
      queued > limit + options_.scheduler.max_running_requests) {
    --queued_;
    return resource_exhausted("the server is at capacity: " + std::to_string(queued - 1) +
                              " requests queued or running");
  }
  const uint64_t rid = next_rid_.fetch_add(options_.rid_stride);
  if (!request.sampling.seed && options_.unseeded_sampling_seed) {
    // (splitmix64 of their sum: neighbouring ids get unrelated seeds.)
    request.sampling.seed =
        kernels::sampling_math::splitmix64(*options_.unseeded_sampling_seed + rid);
  } else if (!request.sampling.seed) {
    std::random_device entropy;
    request.sampling.seed = (static_cast<uint64_t>(entropy()) << 32) | entropy();
  }
  auto stream = std::make_shared<RequestStream>(rid);
  queued_tokens_ += prompt;
  post(Submit{rid, std::move(request), stream});
  return stream;
}

void Engine::abort(uint64_t rid) { post(Abort{rid}); }

bool Engine::flush_cache() {
  Flush flush;
  std::future<bool> done = flush.done.get_future();
  post(std::move(flush));
  return done.get();
}

void Engine::pause_generation(PauseMode mode) {
  Pause pause{mode, {}};
  std::future<void> done = pause.done.get_future();
  post(std::move(pause));
  done.get();
}

void Engine::continue_generation() {
  Continue cont;
  std::future<void> done = cont.done.get_future();
  post(std::move(cont));
  done.get();
}

Status Engine::start_profile(ProfileRequest request) {
  StartProfile start{std::move(request), {}};
  std::future<Status> done = start.done.get_future();
  post(std::move(start));
  return done.get();
}

Status Engine::stop_profile() {
  StopProfile stop;
  std::future<Status> done = stop.done.get_future();
  post(std::move(stop));
  return done.get();
}

EngineStats Engine::get_stats() {
  Stats stats;
  std::future<EngineStats> done = stats.done.get_future();
  post(std::move(stats));
  return done.get();
}

Status Engine::last_integrity() const {
  std::lock_guard lock(integrity_mutex_);
  return last_integrity_;
}

void Engine::post(Message message) {
  {
    std::lock_guard lock(inbox_mutex_);
    if (!loop_drained_) {
      inbox_.push_back(std::move(message));
      inbox_cv_.notify_all();
      return;
    }
  }
  answer_unserved(message);
}

void Engine::answer_unserved(Message& message) {
  if (auto* s = std::get_if<Submit>(&message)) {
    --queued_;
    queued_tokens_ -= static_cast<int64_t>(s->request.input_ids.size());
    StreamEvent event;
    event.finished =
        scheduler::FinishState{scheduler::FinishReason::kAbort, -1, "the engine is shutting down",
                               scheduler::kServiceUnavailable};
    s->stream->push(std::move(event));
  } else if (auto* f = std::get_if<Flush>(&message)) {
    f->done.set_value(false);
  } else if (auto* st = std::get_if<Stats>(&message)) {
    st->done.set_value(make_stats());
  } else if (auto* p = std::get_if<Pause>(&message)) {
    p->done.set_value();  // nothing runs any more
  } else if (auto* c = std::get_if<Continue>(&message)) {
    c->done.set_value();
  } else if (auto* sp = std::get_if<StartProfile>(&message)) {
    sp->done.set_value(invalid_argument("the engine is shutting down"));
  } else if (auto* tp = std::get_if<StopProfile>(&message)) {
    tp->done.set_value(invalid_argument("the engine is shutting down"));
  }
}

// Applies queued messages, first waiting up to `max_wait` for one. False once stopping.
bool Engine::handle_inbox(std::chrono::milliseconds max_wait) {
  std::vector<Message> messages;
  {
    std::unique_lock lock(inbox_mutex_);
    // No timed wait when not waiting: one with a deadline already past still sleeps until a
    // timer fires (tens of microseconds, between every two steps).
    if (max_wait.count() > 0) {
      inbox_cv_.wait_for(lock, max_wait, [this] { return stopping_ || !inbox_.empty(); });
    }
    if (stopping_) return false;
    messages.swap(inbox_);
  }
  for (Message& m : messages) {
    if (auto* s = std::get_if<Submit>(&m)) {
      const auto prompt = static_cast<int64_t>(s->request.input_ids.size());
      streams_[s->rid] = Tracked{s->stream, prompt};
      if (!scheduler_->add_request(s->rid, std::move(s->request))) {
        StreamEvent event;
        event.finished =
            scheduler::FinishState{scheduler::FinishReason::kAbort, -1, "the waiting queue is full",
                                   scheduler::kServiceUnavailable};
        s->stream->push(std::move(event));
        streams_.erase(s->rid);
        --queued_;
        queued_tokens_ -= prompt;
      }
    } else if (auto* a = std::get_if<Abort>(&m)) {
      scheduler_->abort(a->rid, "aborted by the client");
    } else if (auto* f = std::get_if<Flush>(&m)) {
      // Paused: what waits in the queue holds no KV, and the batches in flight are drained.
      if ((paused_ || scheduler_->idle()) && scheduler_->in_flight_batches() > 0) {
        settling_flushes_.push_back(std::move(*f));
      } else {
        f->done.set_value(scheduler_->flush_cache(paused_));
      }
    } else if (auto* st = std::get_if<Stats>(&m)) {
      st->done.set_value(make_stats());
    } else if (auto* p = std::get_if<Pause>(&m)) {
      paused_ = true;
      last_gen_throughput_ = 0;
      if (p->mode == PauseMode::kAbort) abort_all("aborted by pause_generation", 0);
      settling_pauses_.push_back(std::move(*p));
    } else if (auto* c = std::get_if<Continue>(&m)) {
      paused_ = false;
      c->done.set_value();
    } else if (auto* sp = std::get_if<StartProfile>(&m)) {
      sp->done.set_value(profiler_.start(std::move(sp->request)));
    } else if (auto* tp = std::get_if<StopProfile>(&m)) {
      // Answered once the trace is written: after the batches it recorded still in flight.
      auto done = std::make_shared<std::promise<Status>>(std::move(tp->done));
      Status refused =
          profiler_.stop([done](Status status) { done->set_value(std::move(status)); });
      if (!refused.ok()) done->set_value(std::move(refused));
    }
  }
  return true;
}

void Engine::answer_settled_flushes() {
  if (settling_flushes_.empty() || scheduler_->in_flight_batches() > 0) return;
  // False when requests came in meanwhile, as a flush asked for while they run.
  for (Flush& f : settling_flushes_) f.done.set_value(scheduler_->flush_cache(paused_));
  settling_flushes_.clear();
}

void Engine::settle_pauses() {
  for (Pause& p : settling_pauses_) {
    if (p.mode == PauseMode::kRetract) scheduler_->retract_all();
    p.done.set_value();
  }
  settling_pauses_.clear();
}

void Engine::dispatch_updates() {
  scheduler_->take_updates(&updates_);
  int64_t new_tokens = 0;
  for (scheduler::ReqUpdate& u : updates_) {
    auto it = streams_.find(u.rid);
    if (it == streams_.end()) continue;
    StreamEvent event;
    event.token_ids = std::move(u.new_token_ids);
    event.logprobs = std::move(u.new_logprobs);
    event.top_logprobs = std::move(u.new_top_logprobs);
    event.token_ids_logprobs = std::move(u.new_token_ids_logprobs);
    event.input_logprobs = std::move(u.input_logprobs);
    event.embedding = std::move(u.embedding);
    event.hidden_states = std::move(u.new_hidden_states);
    event.routed_experts = std::move(u.new_routed_experts);
    event.spec = std::move(u.spec);
    event.finished = std::move(u.finished);
    event.usage = {u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.retractions};
    const bool finished = event.finished.has_value();
    new_tokens += static_cast<int64_t>(event.token_ids.size());
    it->second.stream->push(std::move(event));
    if (finished) {
      queued_tokens_ -= it->second.prompt_tokens;
      streams_.erase(it);
      --queued_;
    }
  }
  interval_tokens_ += new_tokens;
}

void Engine::abort_all(const std::string& reason, int32_t status_code) {
  for (auto& [rid, tracked] : streams_) scheduler_->abort(rid, reason, status_code);
  dispatch_updates();
}

void Engine::sleep_before_forward() {
  const double seconds = forward_sleep_s_.load();
  if (seconds <= 0) return;
  std::unique_lock lock(inbox_mutex_);
  inbox_cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return stopping_; });
}

void Engine::loop(runner::BatchRunner& runner) {
  interval_start_s_ = now_s();
  std::unique_ptr<runner::BatchExecutor> executor;
  if (options_.disable_overlap_schedule) {
    executor = std::make_unique<runner::SyncExecutor>(runner);
  } else {
    executor = std::make_unique<runner::AsyncExecutor>(runner, options_.executor_spin);
  }
  const bool overlap = !options_.disable_overlap_schedule;
  // From the options, not the watchdog pointers: the destructor resets those while this runs.
  const bool watched = options_.watchdog_timeout_s > 0 || options_.soft_watchdog_timeout_s > 0;
  struct InFlight {
    scheduler::ScheduleBatch batch;
    std::chrono::steady_clock::time_point scheduled;  // when its scheduling began
    std::chrono::steady_clock::time_point launched;   // when it was handed to the executor
    bool is_decode = false;
  };
  std::deque<InFlight> in_flight;
  // When the last batch's result was processed: a decode step's time runs from then, or from
  // its scheduling if that came later (so overlapped steps count their period, not their
  // launch-to-result latency, which includes the batch before).
  std::chrono::steady_clock::time_point last_finished{};
  // Waits for the oldest batch (the sync executor runs the model inside wait()) and processes
  // its result; returns the engine CPU seconds spent processing, the wait excluded.
  auto finish_oldest = [&] {
    runner::ExecResult result = executor->wait();
    const auto received = std::chrono::steady_clock::now();
    const double t = thread_cpu_s();
    InFlight& oldest = in_flight.front();
    SGL_CHECK_EQ(result.batch_id, oldest.batch.id);
    if (oldest.batch.pooling != PoolingType::kNone) {
      scheduler_->process_embedding_result(oldest.batch, result.embeddings);
    } else {
      adopt_runner_drafts(result, oldest.batch);
      scheduler_->process_batch_result(oldest.batch, result.output, result.prompt_logprobs,
                                       result.hidden_states, result.routed_experts);
    }
    const auto now = std::chrono::steady_clock::now();
    if (oldest.is_decode) {
      const std::chrono::duration<double> step = now - std::max(last_finished, oldest.scheduled);
      scheduler_->record_decode_time(oldest.batch.id, step.count());
    }
    last_finished = now;
    if (profiler_.recording()) {
      profiler_.add_forward_span(oldest.batch.id, to_us(oldest.launched), to_us(received));
      profiler_.add_process_span(oldest.batch.id, to_us(received), to_us(now));
    }
    profiler_.on_processed(oldest.batch.id);
    in_flight.pop_front();
    steps_processed_.fetch_add(1, std::memory_order_relaxed);
    batch_pending_.store(!in_flight.empty());
    return thread_cpu_s() - t;
  };

  for (;;) {
    const bool idle = in_flight.empty() && (paused_ || scheduler_->idle());
    if (!handle_inbox(idle ? kWaitForever : std::chrono::milliseconds(0))) break;
    if (paused_ || !settling_pauses_.empty()) {
      // Paused (or a pause a continue overtook): nothing new runs; what is in flight finishes.
      while (!in_flight.empty()) finish_oldest();
      dispatch_updates();
      settle_pauses();
      answer_settled_flushes();
      continue;
    }
    const double cpu_start = thread_cpu_s();
    const auto step_start = std::chrono::steady_clock::now();
    scheduler::NextBatch next = scheduler_->get_next_batch_to_run();
    if (next.need_drain) {
      while (!in_flight.empty()) finish_oldest();
      dispatch_updates();
      continue;
    }
    bool is_decode = false, verify = false;
    if (next.batch) {
      // Speculative verify batches are extends that only decode.
      is_decode = std::all_of(next.batch->entries.begin(), next.batch->entries.end(),
                              [](const scheduler::BatchEntry& e) { return e.decodes(); });
      SGL_LOG_DEBUG << describe_batch(*next.batch);
      if (!is_decode && log_enabled(LogLevel::kInfo)) {
        SGL_LOG_INFO << prefill_status(*next.batch, scheduler_->stats());
      }
      if (watched) {
        std::lock_guard lock(watched_batch_mutex_);
        WatchedBatch& w = watched_batch_;
        w.id = next.batch->id;
        w.mode = next.batch->mode;
        w.num_tokens = next.batch->num_tokens();
        w.rids.clear();
        for (const scheduler::BatchEntry& e : next.batch->entries) w.rids.push_back(e.req->rid);
      }
      batch_pending_.store(true);
      sleep_before_forward();
      const auto launched = std::chrono::steady_clock::now();
      if (profiler_.in_progress()) {
        profiler_.on_launch(profiled_batch(*next.batch, scheduler_->stats()), to_us(launched));
      } else {
        profiler_.count_launch(next.batch->id);
      }
      executor->submit(to_exec_batch(*next.batch, options_.eos_token_ids));
      if (profiler_.recording()) {
        profiler_.add_schedule_span(next.batch->id, to_us(step_start),
                                    to_us(std::chrono::steady_clock::now()));
      }
      verify = std::any_of(next.batch->entries.begin(), next.batch->entries.end(),
                           [](const scheduler::BatchEntry& e) { return !e.draft_ids.empty(); });
      in_flight.push_back({std::move(*next.batch), step_start, launched, is_decode});
    }
    double cpu_s = thread_cpu_s() - cpu_start;
    // Overlap: keep the batch just launched running while the previous one is processed. Not a
    // speculative verify: how many drafts it accepts decides where its requests go on, so the
    // next batch is scheduled after its result.
    const size_t keep = overlap && next.batch && !verify ? 1 : 0;
    while (in_flight.size() > keep) cpu_s += finish_oldest();
    const double t = thread_cpu_s();
    dispatch_updates();
    cpu_s += thread_cpu_s() - t;
    answer_settled_flushes();
    if (is_decode) {
      decode_cpu_s_ += cpu_s;
      ++decode_steps_;
      const int64_t logs = options_.decode_log_interval;
      if (decode_steps_ % (logs > 0 ? logs : kThroughputIntervalSteps) == 0) {
        // The interval's tokens over its time, idle time included (SGLang's gap_latency).
        const double now = now_s();
        last_gen_throughput_ = now > interval_start_s_ ? static_cast<double>(interval_tokens_) /
                                                             (now - interval_start_s_)
                                                       : 0;
        interval_tokens_ = 0;
        interval_start_s_ = now;
        if (logs > 0 && log_enabled(LogLevel::kInfo)) SGL_LOG_INFO << decode_status(make_stats());
      }
    }
    if (check_integrity_) {
      Status status = scheduler_->check_integrity();
      std::lock_guard lock(integrity_mutex_);
      if (last_integrity_.ok()) last_integrity_ = std::move(status);
    }
    if (!next.batch && in_flight.empty() && !scheduler_->idle()) {
      // Requests wait but nothing can run now (a timeout pending): poll gently, don't spin.
      if (!handle_inbox(std::chrono::milliseconds(5))) break;
    }
  }
  // Shutdown: finish what is in flight, then abort everything left, queued messages included.
  while (!in_flight.empty()) finish_oldest();
  profiler_.on_settled();
  answer_settled_flushes();
  settle_pauses();
  abort_all("the engine is shutting down", scheduler::kServiceUnavailable);
  std::lock_guard lock(inbox_mutex_);
  for (Message& m : inbox_) answer_unserved(m);
  inbox_.clear();
  loop_drained_ = true;
}

EngineStats Engine::make_stats() const {
  EngineStats stats;
  stats.scheduler = scheduler_->stats();
  if (now_s() - interval_start_s_ <= kThroughputStaleS) {
    stats.generation_throughput = last_gen_throughput_;
  }
  stats.decode_steps = decode_steps_;
  stats.decode_step_cpu_us =
      decode_steps_ ? decode_cpu_s_ / static_cast<double>(decode_steps_) * 1e6 : 0;
  return stats;
}

}  // namespace sgl::engine
