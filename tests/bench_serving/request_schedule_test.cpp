// Poisson arrivals (mean gap 1 / rate, exponential spread) and the FIFO concurrency gate.
#include "bench_serving/request_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace sgl::bench_serving {
namespace {

TEST(ArrivalSchedule, PoissonGapsAverageOneOverTheRate) {
  for (const double rate : {0.5, 10.0, 250.0}) {
    ArrivalSchedule schedule(rate, 42);
    const int n = 200000;
    double sum = 0, sum_sq = 0;
    int below_mean = 0;
    for (int i = 0; i < n; ++i) {
      const double gap = schedule.next_interval_s();
      ASSERT_GE(gap, 0.0);
      sum += gap;
      sum_sq += gap * gap;
      below_mean += gap < 1.0 / rate;
    }
    const double mean = sum / n;
    const double stddev = std::sqrt(sum_sq / n - mean * mean);
    EXPECT_NEAR(mean * rate, 1.0, 0.01) << rate;
    EXPECT_NEAR(stddev * rate, 1.0, 0.02) << rate;  // exponential: std == mean
    // P(gap < mean) = 1 - 1/e for an exponential.
    EXPECT_NEAR(static_cast<double>(below_mean) / n, 1.0 - std::exp(-1.0), 0.01) << rate;
  }
}

TEST(ArrivalSchedule, SameSeedSameArrivalsAndInfinityMeansAllAtOnce) {
  ArrivalSchedule a(3.0, 9), b(3.0, 9);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next_interval_s(), b.next_interval_s());
  ArrivalSchedule burst(std::numeric_limits<double>::infinity(), 9);
  EXPECT_TRUE(burst.all_at_once());
  EXPECT_EQ(burst.next_interval_s(), 0.0);
}

TEST(ConcurrencyGate, QueuesPastTheLimitInArrivalOrder) {
  ConcurrencyGate gate(2);
  EXPECT_TRUE(gate.arrive(0));
  EXPECT_TRUE(gate.arrive(1));
  EXPECT_FALSE(gate.arrive(2));
  EXPECT_FALSE(gate.arrive(3));
  EXPECT_EQ(gate.running(), 2);
  EXPECT_EQ(gate.waiting(), 2u);
  EXPECT_EQ(gate.finish(), std::optional<uint64_t>(2));
  EXPECT_EQ(gate.finish(), std::optional<uint64_t>(3));
  EXPECT_EQ(gate.running(), 2);
  EXPECT_EQ(gate.finish(), std::nullopt);
  EXPECT_EQ(gate.finish(), std::nullopt);
  EXPECT_EQ(gate.running(), 0);
  EXPECT_TRUE(gate.arrive(4));
}

TEST(ConcurrencyGate, NoLimitNeverQueues) {
  ConcurrencyGate gate(std::nullopt);
  for (uint64_t i = 0; i < 5000; ++i) EXPECT_TRUE(gate.arrive(i));
  EXPECT_EQ(gate.running(), 5000);
}

}  // namespace
}  // namespace sgl::bench_serving
