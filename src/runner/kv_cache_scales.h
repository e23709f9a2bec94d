// A checkpoint's FP8 KV-cache scales (SGLang reads them under --kv-cache-dtype fp8_*): per
// layer, `model.layers.{i}.self_attn.k_scale` / `.v_scale`, or on the projections
// (`self_attn.k_proj.k_scale` / `self_attn.v_proj.v_scale`, ModelOpt's older names), or one
// `self_attn.kv_scale` for both. A code c of layer i's cache then reads as float(c) * its scale.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/kv_pool.h"
#include "core/status.h"
#include "model/weight_source.h"

namespace sgl::runner {

// One KvScales per layer, or an empty vector when the checkpoint has none (every layer then
// keeps 1.0, SGLang's default). An error names a layer with no scale while others have one, a
// scale holding more than one value, and one that is not positive and finite.
Result<std::vector<attention::KvScales>> read_kv_cache_scales(const model::WeightSource& weights,
                                                              int64_t num_layers);

}  // namespace sgl::runner
