#include "engine/step_profiler.h"

#include <filesystem>
#include <limits>
#include <map>
#include <system_error>
#include <utility>

#include "core/logging.h"

namespace sgl::engine {
namespace {

constexpr int kSchedulerTrack = 0;
constexpr int kForwardTrack = 1;

Status make_directory(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return invalid_argument("output_dir: cannot create " + dir + ": " + error.message());
  }
  return {};
}

}  // namespace

struct StepProfiler::Capture {
  std::string dir, path;
  int64_t first_batch = 0;
  int64_t last_batch = std::numeric_limits<int64_t>::max();  // open
  bool record_cpu = true, record_gpu = true;
  ChromeTrace trace;
  // Launched batches whose forward span is still to come (their arguments).
  std::map<int64_t, ProfiledBatch> pending;

  explicit Capture(std::string process_name)
      : trace(std::move(process_name), {"scheduler", "forward"}) {}
  bool holds(int64_t batch_id) const { return batch_id >= first_batch && batch_id <= last_batch; }
};

StepProfiler::StepProfiler(std::function<Status(bool on)> device_capture)
    : device_capture_(std::move(device_capture)) {}

StepProfiler::~StepProfiler() = default;

Status StepProfiler::start(ProfileRequest request) {
  if (in_progress()) {
    return invalid_argument("Profiling is already in progress. Call /stop_profile first.");
  }
  if (request.cuda_profiler && !device_capture_) {
    return invalid_argument("activities: CUDA_PROFILER needs a CUDA device");
  }
  if (request.profile_by_stage && !request.num_steps) {
    return invalid_argument("profile_by_stage needs num_steps (passes per stage)");
  }
  if (request.profile_by_stage && !request.profile_prefill && !request.profile_decode) {
    return invalid_argument("profile_stages names no stage");
  }
  if (request.num_steps && *request.num_steps <= 0) {
    return invalid_argument("num_steps must be positive");
  }
  if (request.start_step && *request.start_step < 0) {
    return invalid_argument("start_step must not be negative");
  }
  SGL_RETURN_IF_ERROR(make_directory(request.output_dir));
  // SGLang's rule: a start step already passed means the next pass.
  start_pass_ = request.start_step && *request.start_step > 0
                    ? std::max(*request.start_step, passes_ + 1)
                    : passes_ + 1;
  stop_pass_.reset();
  if (request.num_steps) stop_pass_ = start_pass_ + *request.num_steps - 1;
  prefill_ = {.passes = 0, .done = !request.profile_prefill};
  decode_ = {.passes = 0, .done = !request.profile_decode};
  opened_any_ = false;
  SGL_LOG_INFO << "Profiling starts. Traces will be saved to: " << request.output_dir
               << " (with profile id: " << request.profile_id << ")";
  request_ = std::move(request);
  return {};
}

void StepProfiler::open(const std::string& stage_suffix, int64_t first_batch) {
  const ProfileRequest& r = *request_;
  auto capture = std::make_unique<Capture>("sgl.cpp " + r.rank_name);
  capture->dir = r.output_dir;
  const std::string prefix = r.profile_prefix.empty() ? "" : r.profile_prefix + "-";
  capture->path = (std::filesystem::path(r.output_dir) /
                   (prefix + r.profile_id + "-" + r.rank_name + stage_suffix + ".trace.json.gz"))
                      .string();
  capture->first_batch = first_batch;
  capture->record_cpu = r.record_cpu;
  capture->record_gpu = r.record_gpu;
  open_ = std::move(capture);
  opened_any_ = true;
  if (r.cuda_profiler && !capturing_device_) {
    const Status status = device_capture_(true);
    if (!status.ok()) SGL_LOG_WARN << "CUDA_PROFILER: " << status.message();
    capturing_device_ = status.ok();
  }
}

bool StepProfiler::close(int64_t last_batch) {
  if (!open_) return false;
  open_->last_batch = last_batch;
  closed_.push_back(std::move(open_));
  if (capturing_device_) {
    const Status status = device_capture_(false);
    if (!status.ok()) SGL_LOG_WARN << "CUDA_PROFILER: " << status.message();
    capturing_device_ = false;
  }
  return true;
}

void StepProfiler::finish_profile() { request_.reset(); }

void StepProfiler::on_launch(const ProfiledBatch& batch, double at_us) {
  const int64_t previous = last_launched_;
  count_launch(batch.id);
  if (!request_) return;
  // Open a trace at this pass where the request says, and see whether the pass is its last.
  bool last = false;
  StageCount& stage = batch.prefill ? prefill_ : decode_;
  if (!request_->profile_by_stage) {
    if (passes_ == start_pass_) open("", batch.id);
    last = open_ && stop_pass_ && passes_ == *stop_pass_;
  } else if (!stage.done) {
    if (stage.passes == 0) {
      // The other stage's trace ends where this one begins (one trace records at a time).
      if (close(previous)) (batch.prefill ? decode_ : prefill_).done = true;
      open(batch.prefill ? "-EXTEND" : "-DECODE", batch.id);
    }
    last = ++stage.passes == *request_->num_steps;
  }
  if (Capture* c = capture_of(batch.id)) {
    c->pending.emplace(batch.id, batch);
    if (c->record_cpu) {
      c->trace.add_counter("requests", at_us,
                           {{"running", batch.running}, {"waiting", batch.waiting}});
      c->trace.add_counter("kv_cache", at_us, {{"in_use", batch.kv_in_use}});
    }
  }
  if (!last) return;
  close(batch.id);
  stage.done = true;
  if (!request_->profile_by_stage || (prefill_.done && decode_.done)) finish_profile();
}

StepProfiler::Capture* StepProfiler::capture_of(int64_t batch_id) {
  if (open_ && open_->holds(batch_id)) return open_.get();
  for (auto& c : closed_) {
    if (c->holds(batch_id)) return c.get();
  }
  return nullptr;
}

void StepProfiler::add_schedule_span(int64_t batch_id, double begin_us, double end_us) {
  Capture* c = capture_of(batch_id);
  if (c == nullptr || !c->record_cpu) return;
  c->trace.add_span(kSchedulerTrack, "schedule", begin_us, end_us, {{"batch", batch_id}});
}

void StepProfiler::add_forward_span(int64_t batch_id, double begin_us, double end_us) {
  Capture* c = capture_of(batch_id);
  if (c == nullptr) return;
  const auto it = c->pending.find(batch_id);
  if (it == c->pending.end()) return;
  const ProfiledBatch b = std::move(it->second);
  c->pending.erase(it);
  if (!c->record_gpu) return;
  c->trace.add_span(kForwardTrack, b.mode + " bs=" + std::to_string(b.requests), begin_us, end_us,
                    {{"batch", b.id},
                     {"mode", b.mode},
                     {"requests", b.requests},
                     {"prefill_requests", b.prefill_requests},
                     {"tokens", b.tokens},
                     {"cached_tokens", b.cached_tokens},
                     {"running", b.running},
                     {"waiting", b.waiting},
                     {"kv_in_use", b.kv_in_use}});
}

void StepProfiler::add_process_span(int64_t batch_id, double begin_us, double end_us) {
  Capture* c = capture_of(batch_id);
  if (c == nullptr || !c->record_cpu) return;
  c->trace.add_span(kSchedulerTrack, "process_batch_result", begin_us, end_us,
                    {{"batch", batch_id}});
}

Status StepProfiler::stop(std::function<void(Status)> done) {
  if (!in_progress()) {
    return invalid_argument("Profiling is not in progress. Call /start_profile first.");
  }
  if (!close(last_launched_) && !opened_any_) {
    // Nothing recorded yet (a start step not reached, or no batch): an empty trace, so the
    // caller finds the file it asked for.
    open(request_->profile_by_stage ? "-EXTEND" : "", last_launched_ + 1);
    close(last_launched_);
  }
  finish_profile();
  stop_waiters_.push_back(std::move(done));
  write_ready(last_processed_);
  return {};
}

void StepProfiler::on_processed(int64_t batch_id) {
  last_processed_ = batch_id;
  write_ready(batch_id);
}

void StepProfiler::on_settled() { write_ready(last_launched_); }

void StepProfiler::write_ready(int64_t processed_through) {
  for (auto it = closed_.begin(); it != closed_.end();) {
    Capture& c = **it;
    if (c.last_batch > processed_through) {
      ++it;
      continue;
    }
    Status status = make_directory(c.dir);
    if (status.ok()) status = c.trace.write_gzip(c.path);
    if (status.ok()) {
      SGL_LOG_INFO << "Profiling done. Traces are saved to: " << c.path;
    } else {
      SGL_LOG_WARN << "profile: " << status.message();
      if (!stop_waiters_.empty() && write_status_.ok()) write_status_ = status;
    }
    it = closed_.erase(it);
  }
  if (!closed_.empty() || stop_waiters_.empty()) return;
  const Status status = std::exchange(write_status_, {});
  for (auto& done : std::exchange(stop_waiters_, {})) done(status);
}

}  // namespace sgl::engine
