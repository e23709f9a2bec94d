// DraftLengthPolicy: how many drafts each request of a decode step verifies, chosen per batch
// size from a model of what each choice yields. A verify step costs more than a plain one (more
// tokens through the target, the draft's passes), and what it gains depends on how often the
// drafts stand on this workload; so the engine times its decode steps and reports every verify's
// accepted count, and the policy picks the count with the most tokens per request per second:
//   rate(k) = (1 + expected accepted drafts of k) / step time with k drafts.
// - Step times are kept per batch-size bucket (1, 2-3, 4-7, ...) and draft count (an average
//   of the recent steps); a count not timed yet takes the line between its timed neighbours.
// - Acceptance is one model for every batch size (it is the workload's, not the batch's). For
//   chains (`nested`: the first k of d drafts are the drafts k would have been) it is each
//   position's chance to stand once the drafts before it stood, learnt from every verify: a
//   verify of d drafts that accepted a tried positions 1..min(a + 1, d). A position not tried
//   yet borrows the one before it. For trees, the accepted count of each count verified.
// So every verify informs every shorter count, and two timed steps (the most drafts, then
// none) rank them all. A count's second time replaces its first when faster (a first step can
// be slow); at the bucket's 4th, 8th, 16th ... choice and then every `explore_interval`
// choices a count that could be the best runs once more (timed fewest times, up to 3, then
// longest ago), so the times and the model follow a workload that changes: one timed once, one
// whose estimated rate is near the best's, or, while plain decoding is best, one draft (the
// cheapest verify; it keeps the acceptance model learning).
#pragma once

#include <cstdint>
#include <vector>

namespace sgl::speculative {

class DraftLengthPolicy {
 public:
  // Draft counts 0 (plain decode) .. max_drafts (>= 1).
  explicit DraftLengthPolicy(int32_t max_drafts, bool nested = true, int32_t explore_interval = 64);

  struct Choice {
    int32_t drafts = 0;
    bool exploring = false;  // run to be measured, not (yet) the best
  };
  // The draft count for a decode step of `batch_size` requests: the most drafts, then none, if
  // never timed in its bucket; then the best estimated rate (a count whose estimate rests on
  // its neighbours' times runs as exploring); at the exploring choices a count that could be
  // the best, timed fewest times, then longest ago.
  Choice choose(int32_t batch_size);
  // One request's verify: `drafts` drafts, `accepted` of them stood.
  void record_acceptance(int32_t drafts, int32_t accepted);
  // A decode step of `batch_size` requests that verified at most `drafts` drafts each took
  // `seconds` (wall time, the step's own).
  void record_step(int32_t batch_size, int32_t drafts, double seconds);

  // The estimated tokens per request per second of `drafts` in batch_size's bucket (0 when no
  // count there is timed), and the expected accepted drafts of `drafts`: for logs and tests.
  double rate(int32_t batch_size, int32_t drafts) const;
  double expected_accepted(int32_t drafts) const;
  int32_t max_drafts() const { return max_drafts_; }

 private:
  struct Timing {
    double seconds = 0;      // average step time
    int64_t steps = 0;       // steps timed
    int64_t last_step = -1;  // the bucket's step count when last timed
  };
  struct Bucket {
    std::vector<Timing> counts;  // [max_drafts + 1]
    int64_t steps = 0;           // steps timed
    int64_t choices = 0;         // choose() calls (the exploring schedule's clock)
  };
  // Windowed counts of an event's outcomes (old ones weigh less once `trials` passes a window).
  struct Tally {
    double hits = 0;
    double trials = 0;
  };
  Bucket& bucket(int32_t batch_size);
  const Bucket* find_bucket(int32_t batch_size) const;
  // Step time of `drafts` in `b`: measured, or between the timed counts around it (0: none).
  double step_seconds(const Bucket& b, int32_t drafts) const;
  double rate(const Bucket& b, int32_t drafts) const;
  int32_t best_count(const Bucket& b) const;  // the best estimated rate's (ties: fewer drafts)

  int32_t max_drafts_;
  bool nested_;
  int32_t explore_interval_;
  std::vector<Bucket> buckets_;  // by bit width of the batch size - 1
  // nested: [max_drafts + 1], position j's (1-based) stands out of tries; otherwise by count
  // d: hits = accepted drafts summed, trials = verifies.
  std::vector<Tally> acceptance_;
};

}  // namespace sgl::speculative
