// SafetensorsWeightSource: shape checks and f32/f16/bf16 -> f32 conversion of checkpoint tensors.
#include "model/weight_source.h"

#include <cstring>
#include <sstream>

#include "core/half.h"

namespace sgl::model {

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

Result<std::unique_ptr<SafetensorsWeightSource>> SafetensorsWeightSource::open(
    const std::filesystem::path& model_dir) {
  SGL_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::open(model_dir));
  return std::make_unique<SafetensorsWeightSource>(std::move(checkpoint), model_dir.string());
}

bool SafetensorsWeightSource::has(const std::string& name) const {
  return checkpoint_->find(name) != nullptr;
}

Result<std::vector<int64_t>> SafetensorsWeightSource::shape(const std::string& name) const {
  const TensorInfo* info = checkpoint_->find(name);
  if (info == nullptr) return not_found("weight '" + name + "' is missing from the checkpoint");
  return info->shape;
}

Status SafetensorsWeightSource::check(const std::string& name,
                                      const std::vector<int64_t>& shape) const {
  const TensorInfo* info = checkpoint_->find(name);
  if (info == nullptr) return not_found("weight '" + name + "' is missing from the checkpoint");
  if (info->shape != shape) {
    return invalid_argument("weight '" + name + "' in " + info->file + " has shape " +
                            shape_to_string(info->shape) + ", expected " + shape_to_string(shape));
  }
  if (info->dtype != DType::kF32 && info->dtype != DType::kF16 && info->dtype != DType::kBF16) {
    return unimplemented("weight '" + name + "' in " + info->file + " has dtype " +
                         std::string(dtype_name(info->dtype)) +
                         "; expected a float type (f32, f16, bf16)");
  }
  return Status::ok_status();
}

std::pair<int64_t, int64_t> stored_rows(const std::vector<int64_t>& shape) {
  if (shape.empty()) return {1, 1};
  int64_t per_row = 1;
  for (size_t i = 1; i < shape.size(); ++i) per_row *= shape[i];
  return {shape[0], per_row};
}

Result<size_t> SafetensorsWeightSource::stored_nbytes(const std::string& name) const {
  const TensorInfo* info = checkpoint_->find(name);
  if (info == nullptr) return not_found("weight '" + name + "' is missing from the checkpoint");
  return info->nbytes;
}

Result<std::optional<StoredTensor>> SafetensorsWeightSource::stored(
    const std::string& name, const std::vector<int64_t>& shape) const {
  SGL_RETURN_IF_ERROR(check(name, shape));
  const TensorInfo* info = checkpoint_->find(name);
  StoredTensor out;
  switch (info->dtype) {
    case DType::kF32:
      out.format = kernels::StoredFormat::kF32;
      break;
    case DType::kF16:
      out.format = kernels::StoredFormat::kF16;
      break;
    default:
      out.format = kernels::StoredFormat::kBF16;  // check() admits only these three
  }
  const auto [rows, per_row] = stored_rows(shape);
  out.data = info->data;
  out.rows = rows;
  out.row_bytes = static_cast<size_t>(per_row) * dtype_size(info->dtype);
  return std::optional<StoredTensor>(std::move(out));
}

Status SafetensorsWeightSource::read_f32(const std::string& name, const std::vector<int64_t>& shape,
                                         float* dst) const {
  SGL_RETURN_IF_ERROR(check(name, shape));
  return tensor_to_f32(*checkpoint_->find(name), dst);
}

Status tensor_to_f32(const TensorInfo& info, float* dst) {
  const int64_t n = info.numel();
  switch (info.dtype) {
    case DType::kF32: {
      if (n > 0) std::memcpy(dst, info.data, static_cast<size_t>(n) * sizeof(float));  // unaligned
      return Status::ok_status();
    }
    case DType::kBF16:
    case DType::kF16: {
      const bool bf16 = info.dtype == DType::kBF16;
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits;
        std::memcpy(&bits, info.data + 2 * i, 2);
        dst[i] = bf16 ? bf16_to_float(bits) : f16_to_float(bits);
      }
      return Status::ok_status();
    }
    default:
      return unimplemented("tensor '" + info.name + "' in " + info.file + " has dtype " +
                           std::string(dtype_name(info.dtype)) +
                           "; expected a float type (f32, f16, bf16)");
  }
}

}  // namespace sgl::model
