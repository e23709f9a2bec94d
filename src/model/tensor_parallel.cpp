// Tensor-parallel shard arithmetic and the start-up check.
#include "model/tensor_parallel.h"

#include <algorithm>

#include "core/check.h"
#include "model/expert_parallel.h"

namespace sgl::model {

Result<ShardRange> shard_of(int64_t total, int64_t units, TensorParallel tp,
                            const std::string& what) {
  SGL_CHECK(tp.size >= 1 && tp.rank >= 0 && tp.rank < tp.size)
      << "tensor-parallel rank " << tp.rank << " of " << tp.size;
  if (units <= 0 || total % units != 0) {
    return invalid_argument(what + ": " + std::to_string(total) + " values are not " +
                            std::to_string(units) + " equal units");
  }
  const int64_t unit = total / units;
  if (units >= tp.size) {
    if (units % tp.size != 0) {
      return invalid_argument(what + ": " + std::to_string(units) +
                              " does not divide across --tp-size " + std::to_string(tp.size));
    }
    const int64_t per_rank = units / tp.size;
    return ShardRange{tp.rank * per_rank * unit, per_rank * unit};
  }
  if (tp.size % units != 0) {
    return invalid_argument(what + ": " + std::to_string(units) + " cannot be replicated evenly " +
                            "over --tp-size " + std::to_string(tp.size));
  }
  const int64_t owner = tp.rank / (tp.size / units);
  return ShardRange{owner * unit, unit};
}

int64_t kv_heads_per_rank(int64_t total_num_kv_heads, int tp_size) {
  return std::max<int64_t>(1, total_num_kv_heads / tp_size);
}

Status check_tensor_parallel(const ModelConfig& c, int tp_size, int ep_size) {
  if (tp_size < 1)
    return invalid_argument("--tp-size must be >= 1, got " + std::to_string(tp_size));
  SGL_RETURN_IF_ERROR(check_expert_parallel(c, tp_size, ep_size));
  if (tp_size == 1) return Status::ok_status();
  const std::string tp = "--tp-size " + std::to_string(tp_size);
  auto divides = [&](int64_t n, const char* what) -> Status {
    if (n % tp_size == 0) return Status::ok_status();
    return invalid_argument(tp + " does not divide the model's " + what + " (" + std::to_string(n) +
                            ")");
  };
  SGL_RETURN_IF_ERROR(divides(c.num_attention_heads, "num_attention_heads"));
  const int64_t kv = c.num_key_value_heads;
  if (kv % tp_size != 0 && tp_size % kv != 0) {
    return invalid_argument(tp + " and the model's num_key_value_heads (" + std::to_string(kv) +
                            ") do not divide one another: KV heads can be neither split nor "
                            "replicated evenly");
  }
  SGL_RETURN_IF_ERROR(divides(c.vocab_size, "vocab_size (the vocabulary is not padded)"));
  if (c.num_experts > 0) {
    // An expert's rows are split only between the tp / ep ranks of the group that holds it.
    const int moe_tp = tp_size / ep_size;
    if (c.moe_intermediate_size % moe_tp != 0) {
      return invalid_argument(
          tp + (ep_size > 1 ? " / --ep-size " + std::to_string(ep_size) : std::string()) + " (" +
          std::to_string(moe_tp) + " ranks per expert) does not divide the model's " +
          "moe_intermediate_size (" + std::to_string(c.moe_intermediate_size) + ")");
    }
    if (c.shared_expert_intermediate_size > 0) {
      SGL_RETURN_IF_ERROR(
          divides(c.shared_expert_intermediate_size, "shared_expert_intermediate_size"));
    }
  }
  // Dense layers (all of a dense model's; a MoE model's mlp_only_layers) split intermediate_size.
  bool dense_layer = c.num_experts == 0;
  for (int64_t l = 0; l < c.num_hidden_layers && !dense_layer; ++l) {
    dense_layer = !c.is_sparse_layer(l);
  }
  if (dense_layer) SGL_RETURN_IF_ERROR(divides(c.intermediate_size, "intermediate_size"));
  return Status::ok_status();
}

}  // namespace sgl::model
