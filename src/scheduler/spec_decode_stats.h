// SpecDecodeStats: one request's speculative decoding so far (SGLang's per-request spec_*
// metrics): its verify steps, the drafts they proposed and accepted, and how many steps
// accepted each count.
#pragma once

#include <cstdint>
#include <vector>

namespace sgl::scheduler {

struct SpecDecodeStats {
  int32_t verify_ct = 0;  // verify steps (decode steps with drafts)
  int64_t proposed = 0;   // drafts they verified
  int64_t correct = 0;    // drafts the output kept (not the token sampled after them)
  std::vector<int32_t> correct_histogram;  // [k]: steps that kept k drafts

  void record(int32_t drafts, int32_t kept) {
    ++verify_ct;
    proposed += drafts;
    correct += kept;
    if (correct_histogram.size() <= static_cast<size_t>(kept)) {
      correct_histogram.resize(static_cast<size_t>(kept) + 1, 0);
    }
    ++correct_histogram[static_cast<size_t>(kept)];
  }
};

}  // namespace sgl::scheduler
