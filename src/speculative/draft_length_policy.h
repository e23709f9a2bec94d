// DraftLengthPolicy: how many drafts each request of a decode step verifies, chosen per batch
// size from what each choice was measured to yield. A verify step costs more than a plain one
// (more tokens through the target, the draft's passes), and what it gains depends on the draft's
// accept rate on this workload and on how memory-bound the step still is at this batch size; so
// rather than a fixed table the engine times its decode steps and the policy keeps, per batch-size
// bucket (1, 2-3, 4-7, ...) and per draft count 0..max_drafts, the generated tokens per request
// per second (an exponential average), and picks the best; every `explore_interval` steps of a
// bucket it tries one other draft count again, so it follows a workload that changes.
#pragma once

#include <cstdint>
#include <vector>

namespace sgl::speculative {

class DraftLengthPolicy {
 public:
  // Draft counts 0 (plain decode) .. max_drafts (>= 1).
  explicit DraftLengthPolicy(int32_t max_drafts, int32_t explore_interval = 64);

  struct Choice {
    int32_t drafts = 0;
    bool exploring = false;  // not (yet) measured to be the best
  };
  // The draft count for a decode step of `batch_size` requests: one never tried in its bucket
  // first (the most drafts first), else the best measured, but every explore_interval steps the
  // one measured longest ago.
  Choice choose(int32_t batch_size);
  // A decode step of `batch_size` requests that verified at most `drafts` drafts each generated
  // `tokens` tokens in `seconds` (wall time, the step's own).
  void record(int32_t batch_size, int32_t drafts, int64_t tokens, double seconds);

  // The measured rate of `drafts` in batch_size's bucket (tokens per request per second; 0:
  // never measured), for logs and tests.
  double rate(int32_t batch_size, int32_t drafts) const;
  int32_t max_drafts() const { return max_drafts_; }

 private:
  struct Arm {
    double rate = 0;         // tokens per request per second, averaged
    int64_t trials = 0;      // steps measured
    int64_t last_step = -1;  // the bucket's step count when last measured
  };
  struct Bucket {
    std::vector<Arm> arms;  // [max_drafts + 1]
    int64_t steps = 0;      // steps recorded
  };
  Bucket& bucket(int32_t batch_size);
  const Bucket* find_bucket(int32_t batch_size) const;

  int32_t max_drafts_;
  int32_t explore_interval_;
  std::vector<Bucket> buckets_;  // by bit width of the batch size - 1
};

}  // namespace sgl::speculative
