// Req helpers.
#include "scheduler/req.h"

#include <algorithm>

namespace sgl::scheduler {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kStopString:
      return "stop";
    case FinishReason::kAbort:
      return "abort";
  }
  return "?";
}

int32_t GenerateRequest::input_logprob_count() const {
  if (!return_logprob || logprob_start_len < 0) return 0;
  return std::max(0, static_cast<int32_t>(input_ids.size()) - 1 - logprob_start_len);
}

std::vector<int32_t> Req::all_token_ids() const {
  std::vector<int32_t> ids = request.input_ids;
  ids.insert(ids.end(), output_ids.begin(), output_ids.end());
  return ids;
}

}  // namespace sgl::scheduler
