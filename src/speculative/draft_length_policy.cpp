// DraftLengthPolicy.
#include "speculative/draft_length_policy.h"

#include <algorithm>
#include <bit>

#include "core/check.h"

namespace sgl::speculative {
namespace {

// Weight of a new measurement once an arm has many: its rate is then an average over the last
// ~1/kMinRateWeight steps it ran, long enough that a stretch of text where drafts rarely stand
// (n-gram drafts come in bursts: quoted code, then free prose) does not flip the choice, short
// enough to follow a workload that changes. An arm's first measurements are plainly averaged.
constexpr double kMinRateWeight = 0.05;

size_t bucket_index(int32_t batch_size) {
  return static_cast<size_t>(std::bit_width(static_cast<uint32_t>(std::max(batch_size, 1))) - 1);
}

}  // namespace

DraftLengthPolicy::DraftLengthPolicy(int32_t max_drafts, int32_t explore_interval)
    : max_drafts_(max_drafts), explore_interval_(explore_interval) {
  SGL_CHECK_GE(max_drafts, 1);
  SGL_CHECK_GE(explore_interval, 1);
}

DraftLengthPolicy::Bucket& DraftLengthPolicy::bucket(int32_t batch_size) {
  const size_t i = bucket_index(batch_size);
  if (buckets_.size() <= i) buckets_.resize(i + 1);
  Bucket& b = buckets_[i];
  if (b.arms.empty()) b.arms.resize(static_cast<size_t>(max_drafts_) + 1);
  return b;
}

const DraftLengthPolicy::Bucket* DraftLengthPolicy::find_bucket(int32_t batch_size) const {
  const size_t i = bucket_index(batch_size);
  return i < buckets_.size() && !buckets_[i].arms.empty() ? &buckets_[i] : nullptr;
}

DraftLengthPolicy::Choice DraftLengthPolicy::choose(int32_t batch_size) {
  Bucket& b = bucket(batch_size);
  for (int32_t k = max_drafts_; k >= 0; --k) {
    if (b.arms[static_cast<size_t>(k)].trials == 0) return {k, true};
  }
  int32_t best = 0;
  for (int32_t k = 1; k <= max_drafts_; ++k) {
    if (b.arms[static_cast<size_t>(k)].rate > b.arms[static_cast<size_t>(best)].rate) best = k;
  }
  if (b.steps % explore_interval_ != explore_interval_ - 1) return {best, false};
  // Explore: the arm measured longest ago (its average may be stale).
  int32_t oldest = best == 0 ? 1 : 0;
  for (int32_t k = 0; k <= max_drafts_; ++k) {
    if (k != best &&
        b.arms[static_cast<size_t>(k)].last_step < b.arms[static_cast<size_t>(oldest)].last_step) {
      oldest = k;
    }
  }
  return {oldest, true};
}

void DraftLengthPolicy::record(int32_t batch_size, int32_t drafts, int64_t tokens, double seconds) {
  if (batch_size <= 0 || seconds <= 0) return;
  Bucket& b = bucket(batch_size);
  Arm& arm = b.arms[static_cast<size_t>(std::clamp(drafts, 0, max_drafts_))];
  const double rate = static_cast<double>(tokens) / (static_cast<double>(batch_size) * seconds);
  const double weight = std::max(1.0 / static_cast<double>(arm.trials + 1), kMinRateWeight);
  arm.rate += weight * (rate - arm.rate);
  ++arm.trials;
  arm.last_step = b.steps++;
}

double DraftLengthPolicy::rate(int32_t batch_size, int32_t drafts) const {
  const Bucket* b = find_bucket(batch_size);
  if (b == nullptr || drafts < 0 || drafts > max_drafts_) return 0;
  return b->arms[static_cast<size_t>(drafts)].rate;
}

}  // namespace sgl::speculative
