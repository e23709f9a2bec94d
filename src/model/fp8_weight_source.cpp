// Fp8WeightSource: FP8 weights times their per-tensor, per-channel or per-block scales.
#include "model/fp8_weight_source.h"

#include <algorithm>
#include <array>
#include <unordered_set>

#include "core/fp8.h"

namespace sgl::model {
namespace {

constexpr const char* kScaleSuffixes[] = {"_scale_inv", "_scale"};
// Scales of the activations (which stay in the model's dtype) and of an FP8 KV cache (read by
// the runner, not the model's loader).
constexpr const char* kUnreadSuffixes[] = {".input_scale", ".k_scale", ".v_scale", ".kv_scale"};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

Fp8WeightSource::Fp8WeightSource(std::unique_ptr<SafetensorsWeightSource> inner,
                                 WeightQuantization quantization)
    : inner_(std::move(inner)), quantization_(std::move(quantization)) {
  std::vector<std::string> names = inner_->names();
  std::unordered_set<std::string> hidden;
  for (const std::string& name : names) {
    if (fp8_tensor(name) != nullptr) {
      for (const char* suffix : kScaleSuffixes) hidden.insert(name + suffix);
    }
    for (const char* suffix : kUnreadSuffixes) {
      if (name.ends_with(suffix)) hidden.insert(name);
    }
  }
  for (std::string& name : names) {
    if (!hidden.contains(name)) names_.push_back(std::move(name));
  }
}

const TensorInfo* Fp8WeightSource::fp8_tensor(const std::string& name) const {
  const TensorInfo* info = inner_->checkpoint().find(name);
  return info != nullptr && info->dtype == DType::kF8E4M3 ? info : nullptr;
}

Result<const TensorInfo*> Fp8WeightSource::scale_of(const TensorInfo& weight) const {
  const TensorInfo* scale = nullptr;
  for (const char* suffix : kScaleSuffixes) {
    scale = inner_->checkpoint().find(weight.name + suffix);
    if (scale != nullptr) break;
  }
  if (scale == nullptr) {
    return not_found("weight '" + weight.name + "' is stored as f8e4m3 but its scale ('" +
                     weight.name + "_scale_inv' or '" + weight.name + "_scale') is missing");
  }
  SGL_RETURN_IF_ERROR(inner_->check(scale->name, scale->shape));  // a float dtype
  const int64_t rows = weight.shape.empty() ? 1 : weight.shape[0];
  std::vector<std::vector<int64_t>> accepted;
  std::string expected;
  if (!quantization_.block_size.empty()) {
    if (weight.shape.size() != 2) {
      return invalid_argument("weight '" + weight.name + "' has shape " +
                              shape_to_string(weight.shape) + ": block scales (" +
                              quantization_.describe() + ") need a 2-D weight");
    }
    accepted = {{ceil_div(rows, quantization_.block_size[0]),
                 ceil_div(weight.shape[1], quantization_.block_size[1])}};
    expected = shape_to_string(accepted[0]) + " (" + quantization_.describe() + ")";
  } else {
    if (scale->numel() == 1) return scale;  // one scale for the whole tensor
    accepted = {{rows}, {rows, 1}};
    expected = "one value, or [" + std::to_string(rows) + "] or [" + std::to_string(rows) +
               ", 1] (one per output channel)";
  }
  if (std::find(accepted.begin(), accepted.end(), scale->shape) == accepted.end()) {
    return invalid_argument("scale '" + scale->name + "' in " + scale->file + " has shape " +
                            shape_to_string(scale->shape) + "; weight '" + weight.name +
                            "' of shape " + shape_to_string(weight.shape) + " needs " + expected);
  }
  return scale;
}

Status Fp8WeightSource::check(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorInfo* weight = fp8_tensor(name);
  if (weight == nullptr) return inner_->check(name, shape);
  return scale_for(*weight, shape).status();
}

Result<const TensorInfo*> Fp8WeightSource::scale_for(const TensorInfo& weight,
                                                     const std::vector<int64_t>& shape) const {
  if (weight.shape != shape) {
    return invalid_argument("weight '" + weight.name + "' in " + weight.file + " has shape " +
                            shape_to_string(weight.shape) + ", expected " + shape_to_string(shape));
  }
  return scale_of(weight);
}

Result<std::optional<StoredTensor>> Fp8WeightSource::stored(
    const std::string& name, const std::vector<int64_t>& shape) const {
  if (fp8_tensor(name) == nullptr) return inner_->stored(name, shape);
  SGL_RETURN_IF_ERROR(check(name, shape));
  return std::optional<StoredTensor>();
}

Status Fp8WeightSource::read_f32(const std::string& name, const std::vector<int64_t>& shape,
                                 float* dst) const {
  const TensorInfo* weight = fp8_tensor(name);
  if (weight == nullptr) return inner_->read_f32(name, shape, dst);
  SGL_ASSIGN_OR_RETURN(const TensorInfo* scale_info, scale_for(*weight, shape));
  std::vector<float> scale(static_cast<size_t>(scale_info->numel()));
  SGL_RETURN_IF_ERROR(tensor_to_f32(*scale_info, scale.data()));

  const auto [rows, cols] = stored_rows(weight->shape);
  const std::array<float, 256>& value = fp8_e4m3_table();
  const bool blocks = !quantization_.block_size.empty();
  const int64_t block_rows = blocks ? quantization_.block_size[0] : 1;
  const int64_t block_cols = blocks ? quantization_.block_size[1] : cols;
  const int64_t scale_cols = blocks ? ceil_div(cols, block_cols) : 1;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* in = weight->data + r * cols;
    float* out = dst + r * cols;
    // The scales of row r: one (per tensor), its channel's, or its block row's.
    const float* row_scale = scale.size() == 1 ? scale.data()
                             : blocks          ? scale.data() + (r / block_rows) * scale_cols
                                               : scale.data() + r;
    for (int64_t c = 0; c < cols; ++c) out[c] = value[in[c]] * row_scale[c / block_cols];
  }
  return Status::ok_status();
}

}  // namespace sgl::model
