// What one rank of a tensor-parallel (and expert-parallel) model must read of each stored tensor,
// by its Hugging Face name: the loading tests' expectation for safetensors and GGUF alike.
#pragma once

#include <cstdint>
#include <string>

#include "model/expert_parallel.h"
#include "model/model_config.h"
#include "model/tensor_parallel.h"

namespace sgl::model {

// What rank `tp` of a checkpoint must read of `name` (`bytes` stored).
inline uint64_t expected_bytes(const std::string& name, uint64_t bytes, const ModelConfig& c,
                               int tp) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("norm") || name.ends_with("mlp.gate.weight") || has("shared_expert_gate")) return bytes;
  if (has("k_proj") || has("v_proj")) {
    return bytes * kv_heads_per_rank(c.num_key_value_heads, tp) / c.num_key_value_heads;
  }
  return bytes / tp;
}

// What rank `rank` of tp ranks in ep expert groups must read of `name` (`bytes` stored):
// an expert's tensors only in its group, the rest as under tensor parallelism.
inline uint64_t expected_ep_bytes(const std::string& name, uint64_t bytes, const ModelConfig& c,
                                  int rank, int tp, int ep) {
  const size_t at = name.find(".experts.");
  if (at == std::string::npos) {
    if (name.ends_with("block_sparse_moe.gate.weight")) return bytes;  // Mixtral's router
    return expected_bytes(name, bytes, c, tp);
  }
  const int64_t expert = std::stoll(name.substr(at + 9));
  const ExpertParallel p = expert_parallel({rank, tp}, ep);
  const ShardRange mine = local_experts(c.num_experts, p);
  if (expert < mine.start || expert >= mine.start + mine.size) return 0;
  return bytes / p.moe_tp.size;
}

}  // namespace sgl::model
