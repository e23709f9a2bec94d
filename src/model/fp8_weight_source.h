// Fp8WeightSource: a safetensors checkpoint of FP8 (E4M3) weights with float scales, read as
// the values they stand for.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/weight_quantization.h"
#include "model/weight_source.h"

namespace sgl::model {

// Wraps a checkpoint that WeightQuantization says holds FP8 weights. A tensor stored as
// F8_E4M3 under `X.weight` reads as each value times its scale, `X.weight_scale_inv` (quant_method
// fp8's name) or else `X.weight_scale`, in f32 on the host (WeightLoader then converts it to the
// model's dtype): the scale covers the whole tensor (one value), an output channel ([rows] or
// [rows, 1]) or, with WeightQuantization::block_size [bn, bk], the block of rows
// [i*bn, (i+1)*bn) and columns [j*bk, (j+1)*bk) at scale [i, j] (shape [ceil(rows / bn),
// ceil(cols / bk)]). Tensors stored otherwise (norms, embeddings, routers) read as they are.
//
// names() leaves out the scales and the activation and KV-cache scales (`input_scale`,
// `k_scale`, `v_scale`), so the loader's unread-tensor check does not count them: activations
// stay in the model's dtype, and only an FP8 KV cache reads the KV scales
// (runner/kv_cache_scales.h, through has() and read_f32).
class Fp8WeightSource final : public WeightSource {
 public:
  Fp8WeightSource(std::unique_ptr<SafetensorsWeightSource> inner, WeightQuantization quantization);

  std::string describe() const override { return inner_->describe(); }
  bool has(const std::string& name) const override { return inner_->has(name); }
  Result<std::vector<int64_t>> shape(const std::string& name) const override {
    return inner_->shape(name);
  }
  std::vector<std::string> names() const override { return names_; }
  Status check(const std::string& name, const std::vector<int64_t>& shape) const override;
  Status read_f32(const std::string& name, const std::vector<int64_t>& shape,
                  float* dst) const override;
  // nullopt for an FP8 tensor (only the host applies its scales).
  Result<std::optional<StoredTensor>> stored(const std::string& name,
                                             const std::vector<int64_t>& shape) const override;
  Result<size_t> stored_nbytes(const std::string& name) const override {
    return inner_->stored_nbytes(name);
  }

 private:
  // The FP8 tensor `name` (nullptr when absent or stored otherwise).
  const TensorInfo* fp8_tensor(const std::string& name) const;
  // The scale tensor of the FP8 tensor `weight`, checked against its shape.
  Result<const TensorInfo*> scale_of(const TensorInfo& weight) const;
  // scale_of(weight) once `weight` has the shape a loader asks for (check()'s errors).
  Result<const TensorInfo*> scale_for(const TensorInfo& weight,
                                      const std::vector<int64_t>& shape) const;

  std::unique_ptr<SafetensorsWeightSource> inner_;
  WeightQuantization quantization_;
  std::vector<std::string> names_;  // inner_'s, less the scales
};

}  // namespace sgl::model
