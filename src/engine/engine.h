// Engine: owns the Scheduler and runs its loop on a dedicated thread — the only thread that
// touches scheduling state. Everything else talks to it through typed messages: submit, abort,
// flush the cache, get stats. Batches run through a BatchExecutor, inline (normal loop) or on a
// worker thread (overlap loop: batch N+1 is scheduled and launched before N's results are
// processed).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <variant>
#include <vector>

#include "engine/generate_request.h"
#include "engine/request_stream.h"
#include "engine/step_profiler.h"
#include "engine/watchdog.h"
#include "runner/batch_executor.h"
#include "scheduler/scheduler.h"

namespace sgl::engine {

struct EngineOptions {
  scheduler::SchedulerOptions scheduler;
  bool disable_overlap_schedule = false;  // --disable-overlap-schedule
  // How long the overlap loop's two threads poll before sleeping when one waits for the other
  // (runner::AsyncExecutor): GPU engines poll, a CPU engine's steps are long enough to sleep.
  std::chrono::microseconds executor_spin{0};
  int32_t num_kv_slots = 0;  // KV pool size (the runner's)
  int32_t context_length = 0;
  int64_t vocab_size = 0;      // ids outside [0, vocab) are rejected
  int64_t max_num_tokens = 0;  // tokens one forward can take (the runner's)
  std::vector<int32_t> eos_token_ids;
  // SGLang's status lines at info level: one per prefill batch, and one every this many decode
  // steps (--decode-log-interval; 0: none).
  int64_t decode_log_interval = 40;
  // Request ids are first_rid, first_rid + rid_stride, ...: data-parallel replicas number
  // their requests apart, so an id names its replica (DataParallelController).
  uint64_t first_rid = 1;
  uint64_t rid_stride = 1;
  // --random-seed: a request without a seed samples with one made from this and its request id
  // (reproducible runs, as SGLang's global seed makes them); unset: from the OS's entropy.
  std::optional<uint64_t> unseeded_sampling_seed;
  // The runner records each MoE layer's expert ids (--enable-return-routed-experts on a MoE
  // model): requests may ask for them (GenerateRequest::return_routed_experts).
  bool return_routed_experts = false;
  // The cache keys (lora_cache_key) of the runner's LoRA adapters at start (SGLang's
  // --lora-paths), in id order: a request's lora_id is 0 (none) or one loaded
  // (Engine::set_lora_adapter changes them).
  std::vector<std::string> lora_cache_keys;
  // SGLang's --watchdog-timeout: when batches are in flight and none has finished for this
  // long, the engine logs what ran and calls on_watchdog_timeout; 0: no watchdog.
  // --soft-watchdog-timeout: the same log, and the engine goes on.
  double watchdog_timeout_s = 0;
  double soft_watchdog_timeout_s = 0;
  // Unset: end the process (exit status 1), as SGLang's watchdog kills its server. Tests set it.
  std::function<void()> on_watchdog_timeout;
  // cudaProfilerStart (true) / Stop (false) for a profile's CUDA_PROFILER activity; unset
  // without a CUDA device (StepProfiler).
  std::function<Status(bool on)> device_profiler_capture;
};

// What a replica holds right now, counted at submission (not at the next step), so that a
// burst routed between two steps sees its own effect.
struct EngineLoad {
  int64_t requests = 0;  // submitted, not yet finished
  int64_t tokens = 0;    // their prompt tokens
};

// SGLang's /pause_generation modes: what happens to the requests running when the engine pauses.
enum class PauseMode {
  kAbort,    // they end with finish reason abort
  kRetract,  // back to the waiting queue, their KV freed (recomputed on continue)
  kInPlace,  // kept as they are, KV and all, and go on where they were on continue
};

struct EngineStats {
  scheduler::SchedulerStats scheduler;
  // Tokens streamed over the last decode log interval's time (SGLang's last_gen_throughput);
  // 0 once no interval has ended for 30 s.
  double generation_throughput = 0;
  // Engine-thread CPU time per decode step (schedule + batch build + result processing),
  // averaged over the decode steps so far, in microseconds.
  double decode_step_cpu_us = 0;
  int64_t decode_steps = 0;
};

class Engine {
 public:
  // Construct, build the BatchRunner over req_to_token_pool(), then start() with it.
  explicit Engine(const EngineOptions& options);
  ~Engine();  // stops the loop; outstanding requests end with finish_reason abort
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The scheduler's ReqToTokenPool, for constructing the BatchRunner. Engine thread only once
  // started: the runner keeps its own copy (ExecBatch::req_to_token_writes).
  const cache::ReqToTokenPool& req_to_token_pool() const;
  // Starts the loop thread; the engine owns `runner` (the model, or a fake in tests) and
  // destroys it after the loop has stopped.
  void start(std::unique_ptr<runner::BatchRunner> runner);

  // Validates (a bad request gives kInvalidArgument; a full queue kResourceExhausted) and
  // queues the request. The stream delivers its tokens and finish. A generation model only.
  Result<std::shared_ptr<RequestStream>> submit(GenerateRequest request);
  // An embedding model's request (SchedulerOptions::pooler; SGLang's Engine.encode): the
  // prompt's embedding comes with the stream's final event (StreamEvent::embedding), errors as
  // submit's. `priority`: SGLang's request priority, scheduled as a generation request's.
  Result<std::shared_ptr<RequestStream>> encode(std::vector<int32_t> input_ids,
                                                std::optional<int64_t> priority = std::nullopt);
  // A LoRA adapter loaded as id `id` (>= 1) under `key` (unique per load: its prefixes are
  // cached under it), or unloaded (`key` empty): requests naming an unloaded id are refused.
  void set_lora_adapter(int32_t id, std::string key);
  bool is_embedding() const { return options_.scheduler.pooler.is_embedding(); }
  const EngineOptions& options() const { return options_; }
  void abort(uint64_t rid);
  // Frees the radix cache; false while requests run.
  bool flush_cache();
  // SGLang's /slow_down (for tests): the loop sleeps `forward_sleep_s` before it launches each
  // batch (0: not at all); the sleep ends early when the engine stops.
  void slow_down(double forward_sleep_s) { forward_sleep_s_.store(forward_sleep_s); }
  // Stops running batches until continue_generation (SGLang's /pause_generation); returns once
  // no batch is in flight, so the model is not running. Requests submitted meanwhile wait in
  // the queue. Pausing a paused engine applies `mode` to what it holds.
  void pause_generation(PauseMode mode);
  void continue_generation();
  // SGLang's /start_profile and /stop_profile (StepProfiler): a start is refused while a profile
  // is in progress; a stop returns once the trace is written.
  Status start_profile(ProfileRequest request);
  Status stop_profile();
  // Between a pause and its continue (thread-safe).
  bool paused() const { return paused_.load(); }
  EngineStats get_stats();
  // Thread-safe and lock-free (two atomics; the pair may be a moment apart).
  EngineLoad load() const { return {queued_.load(), queued_tokens_.load()}; }
  // Batches whose results the loop has processed so far; thread-safe, lock-free. A count that
  // moves says the loop is alive (SGLang's /health_generate accepts any output after its start).
  uint64_t steps_processed() const { return steps_processed_.load(std::memory_order_relaxed); }

  // For tests: the scheduler's integrity after the loop's latest step (OK when never run).
  Status last_integrity() const;
  // Check integrity after every step (slow; tests).
  void set_check_integrity(bool on) { check_integrity_ = on; }

 private:
  struct Submit {
    uint64_t rid;
    GenerateRequest request;
    // NOTE: shared with the consumer, who may drop it (a disconnect) before or after the engine
    // finishes the request; neither side outlives the other predictably.
    std::shared_ptr<RequestStream> stream;
  };
  struct Abort {
    uint64_t rid;
  };
  struct Flush {
    std::promise<bool> done;
  };
  struct Stats {
    std::promise<EngineStats> done;
  };
  struct Pause {
    PauseMode mode = PauseMode::kAbort;
    std::promise<void> done;
  };
  struct Continue {
    std::promise<void> done;
  };
  struct StartProfile {
    ProfileRequest request;
    std::promise<Status> done;
  };
  struct StopProfile {
    std::promise<Status> done;
  };
  using Message =
      std::variant<Submit, Abort, Flush, Stats, Pause, Continue, StartProfile, StopProfile>;

  // submit's and encode's checks and queueing.
  Result<std::shared_ptr<RequestStream>> enqueue(GenerateRequest request);
  void post(Message message);
  // Answers a message the loop will not handle (it is shutting down or gone): a submit ends
  // with an abort (and leaves the load counters), a flush fails, stats are what the scheduler
  // last had.
  void answer_unserved(Message& message);
  void loop(runner::BatchRunner& runner);
  // slow_down's sleep, before a batch launches.
  void sleep_before_forward();
  bool handle_inbox(std::chrono::milliseconds max_wait);
  // Answers the flushes that waited for the batches in flight to settle, once none is.
  void answer_settled_flushes();
  // While paused, once no batch is in flight: applies and answers the pauses asked for.
  void settle_pauses();
  void dispatch_updates();
  // The watchdogs' view of the loop (called from their threads).
  WatchdogProgress watchdog_progress() const;
  std::string watchdog_info() const;
  void abort_all(const std::string& reason, int32_t status_code);
  EngineStats make_stats() const;

  EngineOptions options_;
  std::unique_ptr<scheduler::Scheduler> scheduler_;  // engine thread only
  std::unique_ptr<runner::BatchRunner> runner_;      // engine thread only, once started
  struct Tracked {
    std::shared_ptr<RequestStream> stream;
    int64_t prompt_tokens = 0;  // what it adds to queued_tokens_
  };
  std::map<uint64_t, Tracked> streams_;  // engine thread only
  // dispatch_updates' buffer, kept so that streaming a step's updates allocates no vector.
  std::vector<scheduler::ReqUpdate> updates_;  // engine thread only
  // Flushes asked for while no request ran but batches of finished ones were still in flight
  // (the overlap loop): answered once those are processed, not refused (engine thread only).
  std::vector<Flush> settling_flushes_;
  // Pauses waiting for the batches in flight to be processed (engine thread only).
  std::vector<Pause> settling_pauses_;
  std::atomic<uint64_t> next_rid_;
  mutable std::mutex lora_mutex_;
  std::vector<std::string> lora_keys_;  // under lora_mutex_: adapter id i's at [i - 1]; "" unloaded
  std::atomic<int64_t> queued_{0};      // submitted, not yet finished
  std::atomic<int64_t> queued_tokens_{0};  // their prompt tokens
  std::atomic<uint64_t> steps_processed_{0};
  std::atomic<double> forward_sleep_s_{0};
  std::atomic<bool> paused_{false};  // written by the engine thread
  // A batch is scheduled and not yet processed (the watchdogs' "active"; engine thread writes).
  std::atomic<bool> batch_pending_{false};
  // The latest batch launched, for the watchdogs' log (kept only with a watchdog): copied into
  // reused storage each step, formatted only when a watchdog fires.
  struct WatchedBatch {
    int64_t id = -1;  // none yet
    ForwardMode mode = ForwardMode::kIdle;
    int64_t num_tokens = 0;
    std::vector<uint64_t> rids;
  };
  mutable std::mutex watched_batch_mutex_;
  WatchedBatch watched_batch_;  // under watched_batch_mutex_

  std::mutex inbox_mutex_;
  std::condition_variable inbox_cv_;
  std::vector<Message> inbox_;
  bool stopping_ = false;      // under inbox_mutex_
  bool loop_drained_ = false;  // under inbox_mutex_: later messages are answered by post()
  std::thread thread_;
  // Started with the loop, stopped before it (a shutdown's last batches are not a stall).
  std::unique_ptr<Watchdog> watchdog_;
  std::unique_ptr<Watchdog> soft_watchdog_;

  StepProfiler profiler_;  // engine thread only

  bool check_integrity_ = false;
  mutable std::mutex integrity_mutex_;
  Status last_integrity_;
  // The throughput of the last decode log interval (every decode_log_interval decode steps, as
  // SGLang's scheduler measures it) and step timers (engine thread; copied into stats).
  int64_t interval_tokens_ = 0;  // streamed since interval_start_s_
  double interval_start_s_ = 0;
  double last_gen_throughput_ = 0;
  double decode_cpu_s_ = 0;
  int64_t decode_steps_ = 0;
};

}  // namespace sgl::engine
