// Req helpers.
#include "scheduler/req.h"

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

std::vector<int32_t> Req::all_token_ids() const {
  std::vector<int32_t> ids = request.input_ids;
  ids.insert(ids.end(), output_ids.begin(), output_ids.end());
  return ids;
}

}  // namespace sgl::scheduler
