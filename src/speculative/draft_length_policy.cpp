// DraftLengthPolicy.
#include "speculative/draft_length_policy.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "core/check.h"

namespace sgl::speculative {
namespace {

// Weight of a new step time once a count has several: an average over its last ~10 steps (a
// step's time moves with the context length; its noise is small). The first are plainly
// averaged.
constexpr double kMinTimeWeight = 0.1;
// Acceptance tallies weigh about their last kAcceptWindow tries: long enough that a stretch of
// text where drafts rarely stand (n-gram drafts come in bursts: quoted code, then free prose)
// does not flip the choice, short enough to follow a workload that changes.
constexpr double kAcceptWindow = 128;
// A position's estimate starts from the one before it, worth this many tries (the first
// position's from kFirstPrior).
constexpr double kPriorTries = 2;
constexpr double kFirstPrior = 0.5;
// Exploring runs a count never timed or timed more than once only when its estimated rate is
// within this share of the best's: far below it, no plausible error in its time would make it
// the best, and running it costs a slow step (a verify of many drafts that do not stand).
constexpr double kRetimeShare = 0.9;

size_t bucket_index(int32_t batch_size) {
  return static_cast<size_t>(std::bit_width(static_cast<uint32_t>(std::max(batch_size, 1))) - 1);
}

}  // namespace

DraftLengthPolicy::DraftLengthPolicy(int32_t max_drafts, bool nested, int32_t explore_interval)
    : max_drafts_(max_drafts),
      nested_(nested),
      explore_interval_(explore_interval),
      acceptance_(static_cast<size_t>(max_drafts) + 1) {
  SGL_CHECK_GE(max_drafts, 1);
  SGL_CHECK_GE(explore_interval, 1);
}

DraftLengthPolicy::Bucket& DraftLengthPolicy::bucket(int32_t batch_size) {
  const size_t i = bucket_index(batch_size);
  if (buckets_.size() <= i) buckets_.resize(i + 1);
  Bucket& b = buckets_[i];
  if (b.counts.empty()) b.counts.resize(static_cast<size_t>(max_drafts_) + 1);
  return b;
}

const DraftLengthPolicy::Bucket* DraftLengthPolicy::find_bucket(int32_t batch_size) const {
  const size_t i = bucket_index(batch_size);
  return i < buckets_.size() && !buckets_[i].counts.empty() ? &buckets_[i] : nullptr;
}

DraftLengthPolicy::Choice DraftLengthPolicy::choose(int32_t batch_size) {
  Bucket& b = bucket(batch_size);
  const auto timed = [&](int32_t k) { return b.counts[static_cast<size_t>(k)].steps > 0; };
  if (!timed(max_drafts_)) return {max_drafts_, true};
  if (!timed(0)) return {0, true};
  // Early on a count's time may rest on one step, so the bucket's 4th, 8th, 16th ... choices
  // explore too. (Choices, not timed steps: with the overlap loop a step is chosen before the
  // one before it is timed.)
  const int64_t n = ++b.choices;
  const int32_t best = best_count(b);
  if (n % explore_interval_ == 0 ||
      (n >= 4 && n < explore_interval_ && std::has_single_bit(static_cast<uint64_t>(n)))) {
    // Explore, among the counts that could be the best: those timed once (one step's time may
    // be off), those whose estimate is near the best's, and, while plain decoding is
    // best, one draft: the cheapest verify, and without verifies the acceptance model would not
    // see drafts start to stand. Of those the count timed fewest times (up to 3), then longest
    // ago (its time and, above the best, its acceptance may be stale).
    const double best_rate = rate(b, best);
    const auto candidate = [&](int32_t k) {
      return b.counts[static_cast<size_t>(k)].steps == 1 ||
             rate(b, k) >= kRetimeShare * best_rate || (best == 0 && k == 1);
    };
    const auto order = [&](int32_t k) {
      const Timing& t = b.counts[static_cast<size_t>(k)];
      return std::pair(std::min<int64_t>(t.steps, 3), t.last_step);
    };
    int32_t oldest = best;
    for (int32_t k = 0; k <= max_drafts_; ++k) {
      if (candidate(k) && order(k) < order(oldest)) oldest = k;
    }
    return {oldest, true};
  }
  return {best, !timed(best)};
}

int32_t DraftLengthPolicy::best_count(const Bucket& b) const {
  int32_t best = 0;
  double best_rate = rate(b, 0);
  for (int32_t k = 1; k <= max_drafts_; ++k) {
    const double r = rate(b, k);
    if (r > best_rate) best = k, best_rate = r;  // ties: fewer drafts
  }
  return best;
}

void DraftLengthPolicy::record_acceptance(int32_t drafts, int32_t accepted) {
  drafts = std::clamp(drafts, 0, max_drafts_);
  accepted = std::clamp(accepted, 0, drafts);
  if (drafts == 0) return;
  const auto add = [](Tally& t, double hits) {
    t.hits += hits;
    t.trials += 1;
    if (t.trials > kAcceptWindow) {
      t.hits *= kAcceptWindow / t.trials;
      t.trials = kAcceptWindow;
    }
  };
  if (!nested_) {
    add(acceptance_[static_cast<size_t>(drafts)], accepted);
    return;
  }
  // Positions 1..accepted stood; the one after them (if verified) did not.
  for (int32_t j = 1; j <= std::min(accepted + 1, drafts); ++j) {
    add(acceptance_[static_cast<size_t>(j)], j <= accepted ? 1.0 : 0.0);
  }
}

double DraftLengthPolicy::expected_accepted(int32_t drafts) const {
  drafts = std::clamp(drafts, 0, max_drafts_);
  if (!nested_) {
    // A count never verified borrows the count below it (a larger tree accepts no less).
    double below = 0;
    for (int32_t d = 1; d <= drafts; ++d) {
      const Tally& t = acceptance_[static_cast<size_t>(d)];
      below = (t.hits + kPriorTries * below) / (t.trials + kPriorTries);
    }
    return below;
  }
  double stand = kFirstPrior, all_stood = 1, expected = 0;
  for (int32_t j = 1; j <= drafts; ++j) {
    const Tally& t = acceptance_[static_cast<size_t>(j)];
    stand = (t.hits + kPriorTries * stand) / (t.trials + kPriorTries);
    all_stood *= stand;
    expected += all_stood;  // position j adds a token when it and every one before it stood
  }
  return expected;
}

void DraftLengthPolicy::record_step(int32_t batch_size, int32_t drafts, double seconds) {
  if (batch_size <= 0 || seconds <= 0) return;
  Bucket& b = bucket(batch_size);
  Timing& t = b.counts[static_cast<size_t>(std::clamp(drafts, 0, max_drafts_))];
  if (t.steps == 1) {
    // The second time replaces the first when faster: a first step can be slow (a graph's first
    // replay, a step that waited for a prefill), and a slow time would stand for long.
    t.seconds = std::min(t.seconds, seconds);
  } else {
    const double weight = std::max(1.0 / static_cast<double>(t.steps + 1), kMinTimeWeight);
    t.seconds += weight * (seconds - t.seconds);
  }
  ++t.steps;
  t.last_step = b.steps++;
}

double DraftLengthPolicy::step_seconds(const Bucket& b, int32_t drafts) const {
  const Timing& own = b.counts[static_cast<size_t>(drafts)];
  if (own.steps > 0) return own.seconds;
  int32_t lo = drafts - 1, hi = drafts + 1;
  while (lo >= 0 && b.counts[static_cast<size_t>(lo)].steps == 0) --lo;
  while (hi <= max_drafts_ && b.counts[static_cast<size_t>(hi)].steps == 0) ++hi;
  if (lo < 0 && hi > max_drafts_) return 0;
  if (lo < 0) return b.counts[static_cast<size_t>(hi)].seconds;
  if (hi > max_drafts_) return b.counts[static_cast<size_t>(lo)].seconds;
  const double a = b.counts[static_cast<size_t>(lo)].seconds;
  const double c = b.counts[static_cast<size_t>(hi)].seconds;
  return a + (c - a) * (drafts - lo) / (hi - lo);
}

double DraftLengthPolicy::rate(const Bucket& b, int32_t drafts) const {
  const double seconds = step_seconds(b, drafts);
  return seconds > 0 ? (1 + expected_accepted(drafts)) / seconds : 0;
}

double DraftLengthPolicy::rate(int32_t batch_size, int32_t drafts) const {
  const Bucket* b = find_bucket(batch_size);
  if (b == nullptr || drafts < 0 || drafts > max_drafts_) return 0;
  return rate(*b, drafts);
}

}  // namespace sgl::speculative
