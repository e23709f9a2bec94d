// The scheduler tests' driver: a Scheduler run against the fake model (FakeBatchRunner), step by
// step in the normal or the overlap loop, recording every batch and every request's output and
// checking the scheduler's integrity after each step.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "engine/exec_batch.h"
#include "scheduler/fake_batch_runner.h"
#include "scheduler/greedy_ids_request.h"
#include "scheduler/scheduler.h"

namespace sgl::scheduler::test_driver {

constexpr int32_t kVocab = 97;
constexpr int32_t kEos = 0;

inline std::vector<int32_t> tokens(int32_t n, int32_t seed) {
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < n; ++i) ids.push_back(1 + (seed * 31 + i * 7) % (kVocab - 1));
  return ids;
}

// What a scheduled batch held, recorded when it was scheduled (its Req pointers die with the
// requests).
struct BatchRecord {
  ForwardMode mode;
  std::vector<std::pair<uint64_t, int32_t>> extends;  // (rid, extend_len)
  int64_t num_tokens = 0;
  int64_t scored = 0;          // prompt positions whose logprob the batch returns
  int64_t prefill_tokens = 0;  // of prefill entries (decode entries have no host input ids)
  int64_t drafts = 0;          // speculative drafts the batch verifies
  int64_t decode_entries = 0;  // plain decodes and verifies (each yields a token, then drafts)
  int64_t id = 0;
  bool skip_draft = false;
  bool overlapped = false;  // scheduled while the batch before was in flight
  bool masked = false;      // carries a grammar mask (the runner waits for it to sample)
};

// Runs a Scheduler with the fake model. Checks integrity after every step.
class Driver {
 public:
  Driver(const SchedulerOptions& options, int32_t kv_slots, int32_t context, bool overlap)
      : scheduler_(options, kv_slots, context, {kEos}, kVocab),
        runner_(scheduler_.req_to_token_pool(), kv_slots, kVocab),
        overlap_(overlap) {}

  uint64_t submit(GenerateRequest r) {
    const uint64_t rid = next_rid_++;
    EXPECT_TRUE(scheduler_.validate(r).ok()) << scheduler_.validate(r).to_string();
    requests_[rid] = r;
    EXPECT_TRUE(scheduler_.add_request(rid, std::move(r)));
    return rid;
  }

  // One loop iteration; false when nothing was scheduled or in flight.
  bool step() {
    NextBatch next = scheduler_.get_next_batch_to_run();
    if (next.need_drain) {
      EXPECT_TRUE(overlap_);
      while (!in_flight_.empty()) finish_oldest();
      return true;
    }
    if (next.batch) {
      BatchRecord record{next.batch->mode, {}, next.batch->num_tokens()};
      record.id = next.batch->id;
      record.skip_draft = next.batch->skip_draft;
      record.overlapped = !in_flight_.empty();
      record.masked = next.batch->vocab_mask.valid();
      for (const BatchEntry& e : next.batch->entries) {
        record.extends.emplace_back(e.req->rid, e.extend_len);
        record.scored += static_cast<int64_t>(e.logprob_targets.size());
        if (!e.input_ids.empty() && e.draft_ids.empty()) record.prefill_tokens += e.extend_len;
        record.drafts += static_cast<int64_t>(e.draft_ids.size());
        record.decode_entries += e.input_ids.empty() || !e.draft_ids.empty();
      }
      batches_.push_back(std::move(record));
      in_flight_.push_back(std::move(*next.batch));
    }
    // As the engine: a verify batch is processed before the next one is scheduled.
    const size_t keep = overlap_ && next.batch && batches_.back().drafts == 0 ? 1 : 0;
    const bool progressed = next.batch.has_value() || !in_flight_.empty();
    while (in_flight_.size() > keep) finish_oldest();
    collect();
    Status integrity = scheduler_.check_integrity();
    EXPECT_TRUE(integrity.ok()) << integrity.to_string();
    return progressed;
  }

  void run_until_idle(int max_steps = 100000) {
    for (int i = 0; i < max_steps; ++i) {
      if (!step() && scheduler_.idle()) return;
    }
    ADD_FAILURE() << "did not finish in " << max_steps << " steps";
  }

  void collect() {
    std::vector<ReqUpdate> updates;
    scheduler_.take_updates(&updates);
    for (ReqUpdate& u : updates) {
      auto& out = outputs_[u.rid];
      out.insert(out.end(), u.new_token_ids.begin(), u.new_token_ids.end());
      hidden_states_[u.rid].insert(hidden_states_[u.rid].end(), u.new_hidden_states.begin(),
                                   u.new_hidden_states.end());
      routed_experts_[u.rid].insert(routed_experts_[u.rid].end(), u.new_routed_experts.begin(),
                                    u.new_routed_experts.end());
      if (u.finished) finished_[u.rid] = *u.finished;
      retractions_[u.rid] = std::max(retractions_[u.rid], u.retractions);
    }
  }

  void expect_reference_outputs() {
    for (const auto& [rid, r] : requests_) {
      if (finished_.count(rid) && finished_[rid].reason == FinishReason::kAbort) continue;
      ASSERT_TRUE(finished_.count(rid)) << "request " << rid << " never finished";
      const auto expected = test::fake_reference(
          r.input_ids, r.max_new_tokens, kVocab,
          r.ignore_eos ? std::vector<int32_t>{} : std::vector<int32_t>{kEos}, runner_.memory());
      EXPECT_EQ(outputs_[rid], expected) << "request " << rid;
    }
  }

  // Speculation's adaptive draft length: the wall time each step "took" (none when unset).
  std::function<double(const BatchRecord&)> step_time;

  Scheduler& scheduler() { return scheduler_; }
  test::FakeBatchRunner& runner() { return runner_; }
  const std::vector<BatchRecord>& batches() const { return batches_; }
  std::map<uint64_t, std::vector<int32_t>>& outputs() { return outputs_; }
  std::map<uint64_t, FinishState>& finished() { return finished_; }
  // Times each request was retracted, as its updates tell.
  std::map<uint64_t, int32_t>& retractions() { return retractions_; }
  // Each request's hidden states, as its updates delivered them (the fake runner's rows).
  std::map<uint64_t, std::vector<float>>& hidden_states() { return hidden_states_; }
  std::map<uint64_t, std::vector<int32_t>>& routed_experts() { return routed_experts_; }
  const GenerateRequest& request(uint64_t rid) const { return requests_.at(rid); }

 private:
  void finish_oldest() {
    const ScheduleBatch& batch = in_flight_.front();
    const runner::ExecResult result = runner_.run(engine::to_exec_batch(batch));
    scheduler_.process_batch_result(batch, result.output, result.prompt_logprobs,
                                    result.hidden_states, result.routed_experts);
    // The engine times each decode step when its result is processed.
    const bool decode = std::all_of(batch.entries.begin(), batch.entries.end(),
                                    [](const BatchEntry& e) { return e.decodes(); });
    if (step_time && decode) {
      const auto record = std::find_if(batches_.begin(), batches_.end(),
                                       [&](const BatchRecord& b) { return b.id == batch.id; });
      scheduler_.record_decode_time(batch.id, step_time(*record));
    }
    in_flight_.pop_front();
  }

  Scheduler scheduler_;
  test::FakeBatchRunner runner_;
  bool overlap_;
  uint64_t next_rid_ = 1;
  std::deque<ScheduleBatch> in_flight_;
  std::vector<BatchRecord> batches_;
  std::map<uint64_t, GenerateRequest> requests_;
  std::map<uint64_t, std::vector<int32_t>> outputs_;
  std::map<uint64_t, FinishState> finished_;
  std::map<uint64_t, int32_t> retractions_;
  std::map<uint64_t, std::vector<float>> hidden_states_;
  std::map<uint64_t, std::vector<int32_t>> routed_experts_;
};

}  // namespace sgl::scheduler::test_driver
