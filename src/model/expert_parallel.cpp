// Expert-parallel arithmetic and the start-up check.
#include "model/expert_parallel.h"

#include <string>

#include "core/check.h"

namespace sgl::model {

ExpertParallel expert_parallel(TensorParallel tp, int ep_size) {
  SGL_CHECK(ep_size >= 1 && tp.size % ep_size == 0)
      << "--ep-size " << ep_size << " over --tp-size " << tp.size;
  const int moe_tp_size = tp.size / ep_size;
  return ExpertParallel{.ep_rank = tp.rank / moe_tp_size,
                        .ep_size = ep_size,
                        .moe_tp = {tp.rank % moe_tp_size, moe_tp_size}};
}

ExpertDispatch resolve_expert_dispatch(ExpertDispatch dispatch, Device device) {
  if (dispatch != ExpertDispatch::kAuto) return dispatch;
  return device.is_cpu() ? ExpertDispatch::kAllToAll : ExpertDispatch::kAllReduce;
}

ShardRange local_experts(int64_t num_experts, const ExpertParallel& ep) {
  const int64_t per_group = num_experts / ep.ep_size;
  return ShardRange{ep.ep_rank * per_group, per_group};
}

Status check_expert_parallel(const ModelConfig& c, int tp_size, int ep_size) {
  if (ep_size < 1)
    return invalid_argument("--ep-size must be >= 1, got " + std::to_string(ep_size));
  if (ep_size == 1) return Status::ok_status();
  const std::string ep = "--ep-size " + std::to_string(ep_size);
  if (tp_size % ep_size != 0) {
    return invalid_argument(ep + " does not divide --tp-size " + std::to_string(tp_size) +
                            ": the experts are split over ep-size groups of the tensor-parallel "
                            "ranks (tp-size / ep-size ranks each)");
  }
  if (c.num_experts == 0) {
    return invalid_argument(ep + " needs a mixture-of-experts model; " + c.architecture +
                            " is dense (expert parallelism splits the experts)");
  }
  if (c.num_experts % ep_size != 0) {
    return invalid_argument(ep + " does not divide the model's num_experts (" +
                            std::to_string(c.num_experts) + ")");
  }
  return Status::ok_status();
}

}  // namespace sgl::model
