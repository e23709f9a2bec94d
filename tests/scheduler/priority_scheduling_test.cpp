// Priority scheduling (SGLang's --enable-priority-scheduling) against the fake runner: the waiting
// queue's order, preemption of running requests (by running slots and by KV, within the
// threshold or not, in either direction), the full queue's choice, the retraction policy, and a
// priority refused where scheduling by it is off. Every request's tokens stay the reference's.
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/scheduler_driver.h"

namespace sgl::scheduler {
namespace {

using namespace test_driver;

GenerateRequest with_priority(GenerateRequest r, std::optional<int64_t> priority) {
  r.priority = priority;
  return r;
}

SchedulerOptions priority_options(bool low_values_first = false) {
  SchedulerOptions o;
  o.priority.enabled = true;
  o.priority.low_values_first = low_values_first;
  return o;
}

// The rids in the order of their first prefill.
std::vector<uint64_t> prefill_order(const Driver& d) {
  std::vector<uint64_t> order;
  for (const BatchRecord& b : d.batches()) {
    for (const auto& [rid, len] : b.extends) {
      if (len > 1 && std::find(order.begin(), order.end(), rid) == order.end()) {
        order.push_back(rid);
      }
    }
  }
  return order;
}

TEST(PriorityScheduling, PreferredPrioritiesAreAdmittedFirst) {
  for (bool low_first : {false, true}) {
    for (SchedulePolicy policy : {SchedulePolicy::kFcfs, SchedulePolicy::kLof}) {
      SchedulerOptions options = priority_options(low_first);
      options.policy = policy;
      options.max_prefill_tokens = 25;  // one prompt a batch
      Driver d(options, 1024, 256, false);
      const uint64_t p0 = d.submit(with_priority(test::greedy_ids_request(tokens(20, 1), 2), 0));
      const uint64_t p5 = d.submit(with_priority(test::greedy_ids_request(tokens(20, 2), 2), 5));
      const uint64_t p1 = d.submit(with_priority(test::greedy_ids_request(tokens(20, 3), 2), 1));
      // Equal priorities keep the policy's order: lof takes the longer output first.
      const uint64_t p1_long =
          d.submit(with_priority(test::greedy_ids_request(tokens(20, 4), 6), 1));
      // No priority: the least preferred.
      const uint64_t none = d.submit(test::greedy_ids_request(tokens(20, 5), 2));
      d.run_until_idle();
      const std::vector<uint64_t> p1s = policy == SchedulePolicy::kLof
                                            ? std::vector<uint64_t>{p1_long, p1}
                                            : std::vector<uint64_t>{p1, p1_long};
      const std::vector<uint64_t> expected =
          low_first ? std::vector<uint64_t>{p0, p1s[0], p1s[1], p5, none}
                    : std::vector<uint64_t>{p5, p1s[0], p1s[1], p0, none};
      EXPECT_EQ(prefill_order(d), expected)
          << "low first " << low_first << ", " << schedule_policy_name(policy);
      d.expect_reference_outputs();
    }
  }
}

class SchedulerPriorityLoops : public ::testing::TestWithParam<bool> {
 protected:
  bool overlap() const { return GetParam(); }
};
INSTANTIATE_TEST_SUITE_P(Loops, SchedulerPriorityLoops, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "overlap" : "normal"; });

// A preferred request waiting for a running slot preempts the newest of the least preferred
// running requests; the preempted one resumes later with the tokens it would have had.
TEST_P(SchedulerPriorityLoops, APreferredRequestPreemptsForARunningSlot) {
  for (bool low_first : {false, true}) {
    SchedulerOptions options = priority_options(low_first);
    options.max_running_requests = 2;
    Driver d(options, 1024, 256, overlap());
    const int64_t low = low_first ? 50 : -50, high = low_first ? -60 : 60;
    const uint64_t a = d.submit(with_priority(test::greedy_ids_request(tokens(20, 1), 40), low));
    const uint64_t b = d.submit(with_priority(test::greedy_ids_request(tokens(20, 2), 40), low));
    for (int i = 0; i < 4; ++i) d.step();
    const uint64_t h = d.submit(with_priority(test::greedy_ids_request(tokens(20, 3), 5), high));
    for (int i = 0; i < 40 && !d.finished().count(h); ++i) d.step();
    ASSERT_TRUE(d.finished().count(h));
    EXPECT_FALSE(d.finished().count(a) || d.finished().count(b));
    d.run_until_idle();
    EXPECT_EQ(d.scheduler().stats().num_preempted_total, 1);
    EXPECT_EQ(d.retractions()[b], 1);  // the newer of the two was preempted
    EXPECT_EQ(d.retractions()[a], 0);
    d.expect_reference_outputs();
  }
}

// Within the threshold (a gap of 10 is not more than 10), or with preemption off, it waits.
TEST_P(SchedulerPriorityLoops, NoPreemptionWithinTheThresholdOrWhenDisabled) {
  for (bool disabled : {false, true}) {
    SchedulerOptions options = priority_options();
    options.max_running_requests = 2;
    options.priority.preemption = !disabled;
    Driver d(options, 1024, 256, overlap());
    const uint64_t a = d.submit(with_priority(test::greedy_ids_request(tokens(20, 1), 30), 0));
    const uint64_t b = d.submit(with_priority(test::greedy_ids_request(tokens(20, 2), 40), 0));
    for (int i = 0; i < 4; ++i) d.step();
    const uint64_t h =
        d.submit(with_priority(test::greedy_ids_request(tokens(20, 3), 5), disabled ? 100 : 10));
    for (int i = 0; i < 100 && prefill_order(d).size() < 3; ++i) d.step();
    ASSERT_EQ(prefill_order(d).size(), 3u);
    EXPECT_TRUE(d.finished().count(a)) << "admitted before a running request ended";
    d.run_until_idle();
    EXPECT_EQ(d.scheduler().stats().num_preempted_total, 0);
    EXPECT_TRUE(d.finished().count(b) && d.finished().count(h));
    d.expect_reference_outputs();
  }
}

// A preferred request the KV cache cannot hold preempts what holds it.
TEST_P(SchedulerPriorityLoops, APreferredRequestPreemptsForKv) {
  SchedulerOptions options = priority_options();
  Driver d(options, 100, 256, overlap());
  const uint64_t a = d.submit(with_priority(test::greedy_ids_request(tokens(40, 1), 50), 0));
  for (int i = 0; i < 4; ++i) d.step();
  const uint64_t h = d.submit(with_priority(test::greedy_ids_request(tokens(40, 2), 50), 100));
  for (int i = 0; i < 80 && !d.finished().count(h); ++i) d.step();
  ASSERT_TRUE(d.finished().count(h));
  EXPECT_FALSE(d.finished().count(a));
  d.run_until_idle();
  EXPECT_EQ(d.scheduler().stats().num_preempted_total, 1);
  d.expect_reference_outputs();
}

// A full queue turns away its least preferred (then newest) waiting request for a preferred
// newcomer, else the newcomer.
TEST(PriorityScheduling, AFullQueueTurnsAwayTheLeastPreferred) {
  SchedulerOptions options = priority_options();
  options.max_running_requests = 1;
  options.max_queued_requests = 1;
  Driver d(options, 1024, 256, false);
  const uint64_t a = d.submit(with_priority(test::greedy_ids_request(tokens(20, 1), 3), 0));
  const uint64_t b = d.submit(with_priority(test::greedy_ids_request(tokens(20, 2), 3), 0));
  const uint64_t c = d.submit(with_priority(test::greedy_ids_request(tokens(20, 3), 3), 5));
  d.collect();
  ASSERT_TRUE(d.finished().count(b));
  EXPECT_EQ(d.finished()[b].reason, FinishReason::kAbort);
  EXPECT_EQ(d.finished()[b].status_code, kServiceUnavailable);
  EXPECT_EQ(d.finished()[b].message, "The request is aborted by a higher priority request.");
  // Outranking nobody (a, equal, is older): refused.
  EXPECT_FALSE(
      d.scheduler().add_request(100, with_priority(test::greedy_ids_request(tokens(20, 4), 3), 0)));
  d.run_until_idle();
  EXPECT_TRUE(d.finished().count(a) && d.finished().count(c));
  d.expect_reference_outputs();
}

// --retraction-policy priority: a full KV cache retracts the least preferred priority first,
// where the length policy retracts the request with the fewest outputs (the later, preferred one).
TEST(PriorityScheduling, RetractionByPriority) {
  for (bool by_priority : {false, true}) {
    SchedulerOptions options = priority_options();
    options.priority.retract_by_priority = by_priority;
    options.priority.preemption = false;
    options.schedule_conservativeness = 0.3;  // admits both, so that decoding runs out of KV
    Driver d(options, 80, 256, false);
    const uint64_t low = d.submit(with_priority(test::greedy_ids_request(tokens(10, 1), 40), 0));
    for (int i = 0; i < 5; ++i) d.step();
    const uint64_t high = d.submit(with_priority(test::greedy_ids_request(tokens(10, 2), 40), 5));
    d.run_until_idle();
    ASSERT_GT(d.scheduler().stats().num_retracted_total, 0);
    EXPECT_GT(d.retractions()[by_priority ? low : high], 0) << "by priority " << by_priority;
    EXPECT_EQ(d.retractions()[by_priority ? high : low], 0) << "by priority " << by_priority;
    d.expect_reference_outputs();
  }
}

// Without priority scheduling a priority has no effect, or with --abort-on-priority-when-disabled
// ends its request (SGLang's 503).
TEST(PriorityScheduling, APriorityWhereSchedulingByItIsOff) {
  for (bool abort : {false, true}) {
    SchedulerOptions options;
    options.priority.abort_when_disabled = abort;
    Driver d(options, 1024, 256, false);
    const uint64_t given = d.submit(with_priority(test::greedy_ids_request(tokens(20, 1), 3), 7));
    const uint64_t none = d.submit(test::greedy_ids_request(tokens(20, 2), 3));
    d.run_until_idle();
    EXPECT_EQ(d.finished()[none].reason, FinishReason::kLength);
    if (abort) {
      EXPECT_EQ(d.finished()[given].reason, FinishReason::kAbort);
      EXPECT_EQ(d.finished()[given].status_code, kServiceUnavailable);
      EXPECT_NE(d.finished()[given].message.find("priority is disabled"), std::string::npos);
    } else {
      EXPECT_EQ(d.finished()[given].reason, FinishReason::kLength);
    }
    d.expect_reference_outputs();
  }
}

TEST(PriorityOptions, GapsSaturateAndFollowTheDirection) {
  PriorityOptions high_first, low_first;
  low_first.low_values_first = true;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(high_first.gap(5, 2), 3);
  EXPECT_EQ(low_first.gap(5, 2), -3);
  EXPECT_EQ(high_first.gap(kMax, kMin), kMax);
  EXPECT_EQ(high_first.gap(kMin, kMax), -kMax);
  EXPECT_EQ(low_first.gap(kMin, kMax), kMax);
  EXPECT_TRUE(high_first.prefers(0, high_first.resolve(std::nullopt)));
  EXPECT_TRUE(low_first.prefers(0, low_first.resolve(std::nullopt)));
  PriorityOptions with_default;
  with_default.default_value = 4;
  EXPECT_EQ(with_default.resolve(std::nullopt), 4);
  EXPECT_EQ(with_default.resolve(-2), -2);
}

}  // namespace
}  // namespace sgl::scheduler
