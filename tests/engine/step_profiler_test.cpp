// StepProfiler (SGLang's /start_profile and /stop_profile): which passes a profile records
// (num_steps, start_step, by stage), when its traces are written (after the batches they recorded
// are processed), the refusals, the CUDA profiler range, and the trace files themselves (read
// back through zlib and parsed); then through an engine running the fake model.
#include "engine/step_profiler.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/chrome_trace.h"
#include "engine/engine.h"
#include "scheduler/fake_batch_runner.h"
#include "scheduler/greedy_ids_request.h"
#include "stream_outcome.h"

namespace sgl::engine {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A fresh directory under the test's temporary folder.
fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(testing::TempDir()) / ("step_profiler_" + name);
  fs::remove_all(dir);
  return dir;
}

json read_trace(const fs::path& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  EXPECT_NE(file, nullptr) << path;
  if (file == nullptr) return {};
  std::string text;
  char buffer[4096];
  int n = 0;
  while ((n = gzread(file, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
  gzclose(file);
  return json::parse(text);
}

// The batch ids of the trace's spans named `name` (any span when empty) on track `tid`.
std::vector<int64_t> span_batches(const json& trace, int tid, const std::string& name = {}) {
  std::vector<int64_t> ids;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["tid"] != tid) continue;
    if (!name.empty() && e["name"] != name) continue;
    ids.push_back(e["args"]["batch"].get<int64_t>());
  }
  return ids;
}

int count_phase(const json& trace, const std::string& phase) {
  int n = 0;
  for (const json& e : trace["traceEvents"]) n += e["ph"] == phase ? 1 : 0;
  return n;
}

constexpr int kScheduler = 1, kForward = 2;  // the trace's tids

ProfileRequest request_in(const fs::path& dir) {
  ProfileRequest r;
  r.output_dir = dir.string();
  r.profile_id = "42";
  return r;
}

ProfiledBatch batch(int64_t id, bool prefill) {
  ProfiledBatch b;
  b.id = id;
  b.prefill = prefill;
  b.mode = prefill ? "extend" : "decode";
  b.requests = 2;
  b.prefill_requests = prefill ? 2 : 0;
  b.tokens = prefill ? 64 : 2;
  b.running = 2;
  b.kv_in_use = 100 + id;
  return b;
}

// One batch through the loop's hooks, processed at once (the non-overlap loop).
void run_batch(StepProfiler& p, int64_t id, bool prefill = false) {
  const double t = static_cast<double>(id) * 100.0;
  if (p.in_progress()) {
    p.on_launch(batch(id, prefill), t + 10);
  } else {
    p.count_launch(id);
  }
  p.add_schedule_span(id, t, t + 10);
  p.add_forward_span(id, t + 10, t + 90);
  p.add_process_span(id, t + 90, t + 95);
  p.on_processed(id);
}

TEST(StepProfiler, RecordsNumStepsPassesThenWritesAndEnds) {
  const fs::path dir = fresh_dir("num_steps");
  StepProfiler p;
  run_batch(p, 1);  // before the profile
  ProfileRequest r = request_in(dir);
  r.num_steps = 3;
  r.profile_prefix = "pre";
  ASSERT_TRUE(p.start(r).ok());
  EXPECT_TRUE(fs::is_directory(dir));  // made at the start: a bad directory fails it
  run_batch(p, 2, /*prefill=*/true);
  run_batch(p, 3);
  const fs::path file = dir / "pre-42-TP-0.trace.json.gz";
  EXPECT_FALSE(fs::exists(file));
  EXPECT_TRUE(p.in_progress());
  run_batch(p, 4);
  EXPECT_FALSE(p.in_progress());
  ASSERT_TRUE(fs::exists(file));
  run_batch(p, 5);
  const json trace = read_trace(file);
  EXPECT_EQ(span_batches(trace, kForward), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(span_batches(trace, kScheduler, "schedule"), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(span_batches(trace, kScheduler, "process_batch_result"),
            (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(count_phase(trace, "C"), 6);  // two counters a pass
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["tid"] != kForward) continue;
    const int64_t id = e["args"]["batch"];
    EXPECT_EQ(e["name"], id == 2 ? "extend bs=2" : "decode bs=2");
    EXPECT_EQ(e["args"]["kv_in_use"], 100 + id);
    EXPECT_EQ(e["args"]["tokens"], id == 2 ? 64 : 2);
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), id * 100.0 + 10);
    EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 80.0);
  }
  EXPECT_FALSE(p.stop([](Status) {
                  ADD_FAILURE() << "a refused stop answers nothing";
                }).ok());  // ended by its step count
}

TEST(StepProfiler, StartStepWaitsForItsPass) {
  const fs::path dir = fresh_dir("start_step");
  StepProfiler p;
  for (int64_t id = 1; id <= 4; ++id) run_batch(p, id);
  ProfileRequest r = request_in(dir);
  r.start_step = 6;
  r.num_steps = 2;
  ASSERT_TRUE(p.start(r).ok());
  for (int64_t id = 5; id <= 9; ++id) run_batch(p, id);
  EXPECT_FALSE(p.in_progress());
  EXPECT_EQ(span_batches(read_trace(dir / "42-TP-0.trace.json.gz"), kForward),
            (std::vector<int64_t>{6, 7}));

  // A start step already passed is the next pass (SGLang's rule).
  const fs::path late = fresh_dir("start_step_late");
  r = request_in(late);
  r.start_step = 2;
  r.num_steps = 1;
  ASSERT_TRUE(p.start(r).ok());
  run_batch(p, 10);
  EXPECT_EQ(span_batches(read_trace(late / "42-TP-0.trace.json.gz"), kForward),
            (std::vector<int64_t>{10}));
}

TEST(StepProfiler, StopWaitsForTheRecordedBatchesInFlight) {
  const fs::path dir = fresh_dir("stop");
  StepProfiler p;
  ASSERT_TRUE(p.start(request_in(dir)).ok());
  run_batch(p, 1);
  // Batch 2 launched (the overlap loop), its result not yet processed.
  p.on_launch(batch(2, false), 210);
  p.add_schedule_span(2, 200, 210);
  int answers = 0;
  Status answer = internal_error("unanswered");
  ASSERT_TRUE(p.stop([&](Status s) {
                 ++answers;
                 answer = std::move(s);
               }).ok());
  EXPECT_FALSE(p.in_progress());
  EXPECT_EQ(answers, 0);
  const fs::path file = dir / "42-TP-0.trace.json.gz";
  EXPECT_FALSE(fs::exists(file));
  p.add_forward_span(2, 210, 290);
  p.add_process_span(2, 290, 295);
  p.on_processed(2);
  EXPECT_EQ(answers, 1);
  EXPECT_TRUE(answer.ok()) << answer.to_string();
  EXPECT_EQ(span_batches(read_trace(file), kForward), (std::vector<int64_t>{1, 2}));
  // A batch launched after the stop is in no trace.
  run_batch(p, 3);
  EXPECT_EQ(span_batches(read_trace(file), kForward), (std::vector<int64_t>{1, 2}));
}

TEST(StepProfiler, EveryWaitingStopIsAnsweredAndAFailedWriteReported) {
  const fs::path dir = fresh_dir("waiters");
  StepProfiler p;
  ProfileRequest first = request_in(dir);
  first.profile_id = "first";
  ASSERT_TRUE(p.start(first).ok());
  run_batch(p, 1);
  p.on_launch(batch(2, false), 210);  // in flight
  std::vector<Status> answers;
  auto answer = [&](Status s) { answers.push_back(std::move(s)); };
  ASSERT_TRUE(p.stop(answer).ok());
  // A second profile started and stopped while the first's trace waits for batch 2.
  ProfileRequest second = request_in(dir);
  second.profile_id = "second";
  ASSERT_TRUE(p.start(second).ok());
  ASSERT_TRUE(p.stop(answer).ok());
  EXPECT_TRUE(answers.empty());
  p.on_processed(2);
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_TRUE(answers[0].ok() && answers[1].ok());
  EXPECT_EQ(span_batches(read_trace(dir / "first-TP-0.trace.json.gz"), kForward),
            (std::vector<int64_t>{1}));  // batch 2's forward span never came
  EXPECT_TRUE(fs::exists(dir / "second-TP-0.trace.json.gz"));

  // The directory replaced by a file after the start: the stop reports the failed write.
  const fs::path gone = fresh_dir("waiters_gone");
  ASSERT_TRUE(p.start(request_in(gone)).ok());
  run_batch(p, 3);
  fs::remove_all(gone);
  std::ofstream(gone.string()) << "a file";
  answers.clear();
  ASSERT_TRUE(p.stop(answer).ok());
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_NE(answers[0].message().find("output_dir"), std::string::npos) << answers[0].message();
  fs::remove(gone);
  // A profile that ended by its count and failed to write blames no later stop.
  const fs::path later = fresh_dir("waiters_later");
  ProfileRequest counted = request_in(later);
  counted.num_steps = 1;
  ASSERT_TRUE(p.start(counted).ok());
  fs::remove_all(later);
  std::ofstream(later.string()) << "a file";
  run_batch(p, 4);  // its write fails (logged)
  fs::remove(later);
  answers.clear();
  ASSERT_TRUE(p.start(request_in(later)).ok());
  ASSERT_TRUE(p.stop(answer).ok());
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_TRUE(answers[0].ok()) << answers[0].message();
}

TEST(StepProfiler, StopBeforeAnyPassWritesATraceWithoutSteps) {
  const fs::path dir = fresh_dir("empty");
  StepProfiler p;
  run_batch(p, 1);
  ProfileRequest r = request_in(dir);
  r.start_step = 100;
  ASSERT_TRUE(p.start(r).ok());
  run_batch(p, 2);
  bool answered = false;
  ASSERT_TRUE(p.stop([&](Status s) { answered = s.ok(); }).ok());
  EXPECT_TRUE(answered);
  const json trace = read_trace(dir / "42-TP-0.trace.json.gz");
  EXPECT_EQ(count_phase(trace, "X"), 0);
  EXPECT_EQ(count_phase(trace, "M"), 3);  // the process and its two tracks
}

TEST(StepProfiler, RefusesWhatItCannotDo) {
  const fs::path dir = fresh_dir("refusals");
  StepProfiler p;
  const Status not_running = p.stop([](Status) {});
  EXPECT_EQ(not_running.message(), "Profiling is not in progress. Call /start_profile first.");
  ASSERT_TRUE(p.start(request_in(dir)).ok());
  EXPECT_EQ(p.start(request_in(dir)).message(),
            "Profiling is already in progress. Call /stop_profile first.");
  ASSERT_TRUE(p.stop([](Status) {}).ok());

  ProfileRequest r = request_in(dir);
  r.profile_by_stage = true;  // without num_steps
  EXPECT_FALSE(p.start(r).ok());
  r.num_steps = 2;
  r.profile_prefill = r.profile_decode = false;
  EXPECT_FALSE(p.start(r).ok());
  r = request_in(dir);
  r.num_steps = 0;
  EXPECT_FALSE(p.start(r).ok());
  r = request_in(dir);
  r.cuda_profiler = true;  // no device hook: a CPU engine
  EXPECT_NE(p.start(r).message().find("CUDA_PROFILER"), std::string::npos);
  r = request_in("/dev/null/traces");  // under a file: cannot be made
  EXPECT_NE(p.start(r).message().find("output_dir"), std::string::npos);
  EXPECT_FALSE(p.in_progress());  // none of them started a profile
}

TEST(StepProfiler, ByStageWritesAnExtendAndADecodeTrace) {
  const fs::path dir = fresh_dir("by_stage");
  StepProfiler p;
  ProfileRequest r = request_in(dir);
  r.profile_by_stage = true;
  r.num_steps = 2;
  ASSERT_TRUE(p.start(r).ok());
  run_batch(p, 1, true);
  run_batch(p, 2, true);
  run_batch(p, 3, true);  // past the prefill count
  EXPECT_TRUE(p.in_progress());
  run_batch(p, 4);
  run_batch(p, 5);
  EXPECT_FALSE(p.in_progress());
  run_batch(p, 6);
  EXPECT_EQ(span_batches(read_trace(dir / "42-TP-0-EXTEND.trace.json.gz"), kForward),
            (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(span_batches(read_trace(dir / "42-TP-0-DECODE.trace.json.gz"), kForward),
            (std::vector<int64_t>{4, 5}));

  // A decode pass ends the prefill trace early (one trace records at a time); a prefill pass
  // inside the decode trace's window is in it (the trace is a stretch of time, as SGLang's) but
  // not counted; and the profile_stages asked for are the only ones recorded.
  const fs::path early = fresh_dir("by_stage_early");
  r = request_in(early);
  r.profile_by_stage = true;
  r.num_steps = 3;
  ASSERT_TRUE(p.start(r).ok());
  run_batch(p, 7, true);
  run_batch(p, 8);
  run_batch(p, 9, true);
  run_batch(p, 10);
  run_batch(p, 11);
  EXPECT_FALSE(p.in_progress());
  EXPECT_EQ(span_batches(read_trace(early / "42-TP-0-EXTEND.trace.json.gz"), kForward),
            (std::vector<int64_t>{7}));
  EXPECT_EQ(span_batches(read_trace(early / "42-TP-0-DECODE.trace.json.gz"), kForward),
            (std::vector<int64_t>{8, 9, 10, 11}));

  const fs::path decode_only = fresh_dir("by_stage_decode");
  r = request_in(decode_only);
  r.profile_by_stage = true;
  r.num_steps = 1;
  r.profile_prefill = false;
  ASSERT_TRUE(p.start(r).ok());
  run_batch(p, 12, true);
  run_batch(p, 13);
  EXPECT_FALSE(p.in_progress());
  EXPECT_FALSE(fs::exists(decode_only / "42-TP-0-EXTEND.trace.json.gz"));
  EXPECT_EQ(span_batches(read_trace(decode_only / "42-TP-0-DECODE.trace.json.gz"), kForward),
            (std::vector<int64_t>{13}));
}

TEST(StepProfiler, ActivitiesChooseTheTracksAndTheCudaProfilerBracketsTheCapture) {
  const fs::path dir = fresh_dir("activities");
  std::vector<bool> device_calls;
  StepProfiler p([&](bool on) {
    device_calls.push_back(on);
    return Status::ok_status();
  });
  ProfileRequest r = request_in(dir);
  r.record_cpu = false;
  r.cuda_profiler = true;
  r.num_steps = 2;
  r.rank_name = "TP-0-DP-1";
  ASSERT_TRUE(p.start(r).ok());
  EXPECT_TRUE(device_calls.empty());  // from the first recorded pass
  run_batch(p, 1);
  EXPECT_EQ(device_calls, (std::vector<bool>{true}));
  run_batch(p, 2);
  EXPECT_EQ(device_calls, (std::vector<bool>{true, false}));
  const json trace = read_trace(dir / "42-TP-0-DP-1.trace.json.gz");
  EXPECT_EQ(span_batches(trace, kForward), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(span_batches(trace, kScheduler).empty());
  EXPECT_EQ(count_phase(trace, "C"), 0);
  EXPECT_EQ(trace["traceEvents"][0]["args"]["name"], "sgl.cpp TP-0-DP-1");

  r = request_in(dir);
  r.record_gpu = false;
  r.profile_id = "cpu_only";
  r.num_steps = 1;
  ASSERT_TRUE(p.start(r).ok());
  run_batch(p, 3);
  const json cpu = read_trace(dir / "cpu_only-TP-0.trace.json.gz");
  EXPECT_TRUE(span_batches(cpu, kForward).empty());
  EXPECT_EQ(span_batches(cpu, kScheduler, "schedule"), (std::vector<int64_t>{3}));
}

TEST(ChromeTrace, EscapesNamesIntoValidJson) {
  ChromeTrace trace("a \"quoted\"\nname\\", {"t\x01"});
  trace.add_span(0, "span \"x\"", 1.5, 2.25, {{"text", std::string("tab\there")}, {"n", -3}});
  const json parsed = json::parse(trace.json());
  EXPECT_EQ(parsed["traceEvents"][0]["args"]["name"], "a \"quoted\"\nname\\");
  EXPECT_EQ(parsed["traceEvents"][1]["args"]["name"], "t\x01");
  const json& span = parsed["traceEvents"][2];
  EXPECT_EQ(span["name"], "span \"x\"");
  EXPECT_EQ(span["args"]["text"], "tab\there");
  EXPECT_EQ(span["args"]["n"], -3);
  EXPECT_DOUBLE_EQ(span["dur"].get<double>(), 0.75);
}

// Through the engine loop (overlap on, the fake model): a profile of num_steps passes records
// the prefill and the decode steps that follow, and a stop waits for nothing once it has ended.
TEST(StepProfiler, EngineRecordsItsPasses) {
  const fs::path dir = fresh_dir("engine");
  EngineOptions o;
  o.num_kv_slots = 400;
  o.context_length = 256;
  o.vocab_size = 97;
  o.max_num_tokens = 1 << 20;
  Engine engine(o);
  engine.start(std::make_unique<test::FakeBatchRunner>(engine.req_to_token_pool(), 400, 97));
  ProfileRequest r = request_in(dir);
  r.num_steps = 4;
  ASSERT_TRUE(engine.start_profile(r).ok());
  EXPECT_FALSE(engine.start_profile(r).ok());
  auto stream = engine.submit(test::greedy_ids_request({5, 6, 7, 8}, 8));
  ASSERT_TRUE(stream.ok());
  const test::Outcome out = test::collect(**stream);
  EXPECT_EQ(out.ids.size(), 8u);
  EXPECT_FALSE(engine.stop_profile().ok());  // ended by its step count
  const json trace = read_trace(dir / "42-TP-0.trace.json.gz");
  std::vector<std::string> modes;
  std::set<int64_t> batches;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["tid"] != kForward) continue;
    modes.push_back(e["args"]["mode"]);
    batches.insert(e["args"]["batch"].get<int64_t>());
    EXPECT_GE(e["dur"].get<double>(), 0.0);
  }
  EXPECT_EQ(modes, (std::vector<std::string>{"extend", "decode", "decode", "decode"}));
  EXPECT_EQ(span_batches(trace, kScheduler, "process_batch_result").size(), 4u);

  // A stop right after a start (nothing running) answers at once with an empty trace.
  r.profile_id = "idle";
  r.num_steps.reset();
  ASSERT_TRUE(engine.start_profile(r).ok());
  ASSERT_TRUE(engine.stop_profile().ok());
  EXPECT_TRUE(fs::exists(dir / "idle-TP-0.trace.json.gz"));
}

}  // namespace
}  // namespace sgl::engine
