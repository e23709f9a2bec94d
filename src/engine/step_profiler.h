// StepProfiler: SGLang's /start_profile and /stop_profile for one engine. It counts the forward
// passes the loop launches and, over the passes a profile asks for, records a timeline of the
// engine thread (scheduling a batch, processing its result) and of each batch's forward pass
// (from its launch to its result in hand), with the batch's shape and the scheduler's queues as
// arguments, then writes it as a Chrome trace (`{prefix-}{profile_id}-TP-0[-DP-i][-STAGE]
// .trace.json.gz`, SGLang's file names). SGLang's trace comes from the torch profiler (every
// kernel); ours has no kernels: "CUDA_PROFILER" brackets the same passes with cudaProfilerStart /
// Stop, for nsys or ncu to capture them. Engine thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/chrome_trace.h"

namespace sgl::engine {

// SGLang's ProfileReq as the engine takes it (the server fills in SGLang's defaults).
struct ProfileRequest {
  std::string output_dir;
  // The forward pass (counted from the engine's start, 1-based) the profile starts at; unset:
  // the next one.
  std::optional<int64_t> start_step;
  // Passes to record (per stage with profile_by_stage); unset: until /stop_profile.
  std::optional<int64_t> num_steps;
  bool record_cpu = true;      // "CPU": the engine thread's spans
  bool record_gpu = true;      // "GPU": each batch's forward span
  bool cuda_profiler = false;  // "CUDA_PROFILER"
  // Prefill (EXTEND) and decode (DECODE) passes in two traces of num_steps passes each, of the
  // stages asked for (SGLang's profile_stages).
  bool profile_by_stage = false;
  bool profile_prefill = true;
  bool profile_decode = true;
  std::string profile_id;
  std::string profile_prefix;
  // The file name's rank part: "TP-0", and "-DP-<i>" behind several replicas.
  std::string rank_name = "TP-0";
};

// What a launched batch is, for its trace events.
struct ProfiledBatch {
  int64_t id = 0;
  bool prefill = false;  // some entry extends a prompt (SGLang's EXTEND stage), else DECODE
  std::string mode;      // forward_mode_name
  int64_t requests = 0;
  int64_t prefill_requests = 0;
  int64_t tokens = 0;         // tokens the pass runs
  int64_t cached_tokens = 0;  // the prefill entries' prefixes already in the KV cache
  int64_t running = 0;        // the scheduler's running and waiting requests at launch
  int64_t waiting = 0;
  int64_t kv_in_use = 0;  // KV slots held by requests
};

class StepProfiler {
 public:
  // `device_capture(on)`: cudaProfilerStart / Stop; empty where there is no CUDA device.
  explicit StepProfiler(std::function<Status(bool on)> device_capture = {});
  ~StepProfiler();

  // /start_profile: InvalidArgument when a profile is in progress or the request cannot be met
  // (its output directory cannot be made, CUDA_PROFILER without a device).
  Status start(ProfileRequest request);
  // /stop_profile: ends the profile; `done` gets the outcome once its trace is written, which
  // waits for the recorded batches still in flight (launched, not yet processed). Refused
  // (`done` not called) when no profile is in progress.
  Status stop(std::function<void(Status)> done);
  bool in_progress() const { return request_.has_value(); }
  // Some trace may take spans (one is open, or closed and waiting for its last batches): the
  // loop times its spans only then.
  bool recording() const { return open_ != nullptr || !closed_.empty(); }

  // The engine loop's hooks (times in microseconds of the steady clock), in order for each batch:
  // launched (counts the pass and opens or closes traces as the request says), its spans, then
  // processed (writes the traces whose batches are all processed).
  void on_launch(const ProfiledBatch& batch, double at_us);
  // on_launch without a profile in progress (no batch description to build).
  void count_launch(int64_t batch_id) {
    ++passes_;
    last_launched_ = batch_id;
  }
  void add_schedule_span(int64_t batch_id, double begin_us, double end_us);
  void add_forward_span(int64_t batch_id, double begin_us, double end_us);
  void add_process_span(int64_t batch_id, double begin_us, double end_us);
  void on_processed(int64_t batch_id);
  // No batch will be processed any more (the loop has ended): writes what waits.
  void on_settled();

 private:
  struct Capture;
  void open(const std::string& stage_suffix, int64_t first_batch);
  // Ends the open trace after batch `last_batch`; false when none is open.
  bool close(int64_t last_batch);
  Capture* capture_of(int64_t batch_id);
  // Writes the closed traces whose last batch is at most `processed_through`.
  void write_ready(int64_t processed_through);
  void finish_profile();

  std::function<Status(bool)> device_capture_;
  std::optional<ProfileRequest> request_;  // set while a profile is in progress
  int64_t passes_ = 0;                     // forward passes launched since the engine started
  int64_t last_launched_ = -1;             // batch ids
  int64_t last_processed_ = -1;
  // The profile's first and last pass; by stage, each stage's passes so far.
  int64_t start_pass_ = 0;
  std::optional<int64_t> stop_pass_;
  struct StageCount {
    int64_t passes = 0;
    bool done = false;  // its trace is closed, or it was not asked for
  };
  StageCount prefill_, decode_;
  bool opened_any_ = false;  // this profile has opened a trace
  bool capturing_device_ = false;
  std::unique_ptr<Capture> open_;                 // recording
  std::vector<std::unique_ptr<Capture>> closed_;  // waiting for their last batch
  // The /stop_profile calls waiting for the traces to be written, and the first failed write
  // among those they wait for.
  std::vector<std::function<void(Status)>> stop_waiters_;
  Status write_status_;
};

}  // namespace sgl::engine
