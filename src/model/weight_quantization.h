// WeightQuantization: what a checkpoint's quantization_config says about how its weights are
// stored, as far as loading them needs.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace sgl::model {

// FP8 (E4M3) weights with float scales, the one quantized family sgl.cpp loads: quant_method
// "fp8" (DeepSeek / Qwen FP8 checkpoints: weight_scale_inv per weight_block_size block, or one
// weight_scale per tensor), "compressed-tensors" with 8-bit float weights (per tensor, channel or
// block) and "modelopt" with quant_algo FP8 (one weight_scale per tensor). Loading multiplies
// each stored value by its scale into the model's dtype (model/fp8_weight_source.h):
// activations and the KV cache stay in that dtype, so activation and KV scales go unread.
struct WeightQuantization {
  std::string method;  // quant_method as config.json spells it; empty: plain weights
  // [rows, cols] of the weight block one scale covers; empty: a scale per tensor or per output
  // channel (told apart by the scale's shape).
  std::vector<int64_t> block_size;

  bool quantized() const { return !method.empty(); }
  // "fp8, 128 x 128 blocks", for logs.
  std::string describe() const;
};

// Reads config.json's `quantization_config` (or the older `compression_config` of
// compressed-tensors; `config` is the whole object; neither there: plain weights).
// Unimplemented for other methods (GPTQ, AWQ, bitsandbytes, int or 4-bit formats, FP8 E5M2),
// naming the method; InvalidArgument for malformed fields. `source` names the file.
Result<WeightQuantization> parse_weight_quantization(const nlohmann::json& config,
                                                     const std::string& source);
// Reads ModelOpt's hf_quant_config.json, which its checkpoints carry beside a config.json with
// no quantization_config (`{"quantization": {"quant_algo": "FP8", ...}}`), as SGLang does.
Result<WeightQuantization> parse_hf_quant_config(const nlohmann::json& file,
                                                 const std::string& source);

}  // namespace sgl::model
