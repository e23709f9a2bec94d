// WeightSource: where WeightLoader reads named tensors from (safetensors checkpoint or GGUF file).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "kernels/convert_stored.h"
#include "model/safetensors.h"

namespace sgl::model {

// A tensor's bytes as its file stores them, for loaders that copy them as they are and convert
// on the destination device (no f32 round trip on the host). Row r of the tensor is the
// row_bytes bytes at data + row_order[r] * stride() (data + r * stride() when row_order is
// empty); a row is shape[1:] (one value for a 1-D tensor) and a whole number of format blocks.
struct StoredTensor {
  kernels::StoredFormat format = kernels::StoredFormat::kF32;
  const uint8_t* data = nullptr;  // in the source's mapping: valid while the source lives
  int64_t rows = 0;
  size_t row_bytes = 0;
  std::vector<int64_t> row_order;
  // Bytes from one stored row to the next; 0: row_bytes. Larger for a column shard (each row
  // is a range of the file's row).
  size_t row_stride = 0;

  size_t nbytes() const { return static_cast<size_t>(rows) * row_bytes; }
  size_t stride() const { return row_stride == 0 ? row_bytes : row_stride; }
};

// A range of a tensor along one dimension: dim 0 (rows) of any tensor, or dim 1 (columns) of a
// 2-D one. A tensor-parallel rank's shard (model/layers/linear.h decides which). size < 0: the
// whole tensor.
struct TensorSlice {
  int dim = 0;
  int64_t start = 0;
  int64_t size = -1;

  bool whole() const { return size < 0; }
  // The slice's shape within a tensor of shape `full` (checked by check_slice).
  std::vector<int64_t> shape_of(const std::vector<int64_t>& full) const;
};

// InvalidArgument naming `name` when `slice` does not lie within a tensor of shape `full`.
Status check_slice(const std::string& name, const std::vector<int64_t>& full,
                   const TensorSlice& slice);
// `tensor` (of shape `full`) narrowed to `slice`: a row range of its rows, or each row's column
// range, which for a block-quantized format must be whole blocks (InvalidArgument naming `name`
// otherwise). Nothing is read.
Result<StoredTensor> narrow_stored(StoredTensor tensor, const std::vector<int64_t>& full,
                                   const TensorSlice& slice, const std::string& name);
// Copies `slice` of the f32 tensor `src` (shape `full`) into dst, densely.
void copy_slice_f32(const float* src, const std::vector<int64_t>& full, const TensorSlice& slice,
                    float* dst);

// Tensors under Hugging Face names ("model.layers.0.self_attn.q_proj.weight"), read as f32.
// Implementations are immutable after construction; reads may run concurrently.
class WeightSource {
 public:
  virtual ~WeightSource() = default;

  // The directory or file the weights come from, for messages.
  virtual std::string describe() const = 0;
  virtual bool has(const std::string& name) const = 0;
  // Row-major shape of `name`; NotFound when absent.
  virtual Result<std::vector<int64_t>> shape(const std::string& name) const = 0;
  // Every available tensor name, sorted.
  virtual std::vector<std::string> names() const = 0;
  // Whether read_f32(name, shape, ...) would succeed, without touching the data: NotFound when
  // absent, InvalidArgument on a shape mismatch, Unimplemented for a dtype that cannot be
  // converted. Cheap: loaders check every tensor this way before allocating anything.
  virtual Status check(const std::string& name, const std::vector<int64_t>& shape) const = 0;
  // Converts `name`, which must have exactly `shape`, to f32 into dst[0, numel(shape)), with
  // check()'s errors.
  virtual Status read_f32(const std::string& name, const std::vector<int64_t>& shape,
                          float* dst) const = 0;
  // `name`'s stored bytes, which must have exactly `shape`; nullopt when its format is not one
  // kernels::convert_stored handles (read it with read_f32). Errors as read_f32's.
  virtual Result<std::optional<StoredTensor>> stored(const std::string& name,
                                                     const std::vector<int64_t>& shape) const = 0;
  // Bytes `name` takes in its file (what reading it costs); NotFound when absent.
  virtual Result<size_t> stored_nbytes(const std::string& name) const = 0;
};

// A Hugging Face model directory's safetensors checkpoint (single file or shards).
class SafetensorsWeightSource final : public WeightSource {
 public:
  static Result<std::unique_ptr<SafetensorsWeightSource>> open(
      const std::filesystem::path& model_dir);
  SafetensorsWeightSource(std::unique_ptr<Checkpoint> checkpoint, std::string dir)
      : checkpoint_(std::move(checkpoint)), dir_(std::move(dir)) {}

  const Checkpoint& checkpoint() const { return *checkpoint_; }

  std::string describe() const override { return dir_; }
  bool has(const std::string& name) const override;
  Result<std::vector<int64_t>> shape(const std::string& name) const override;
  std::vector<std::string> names() const override { return checkpoint_->names(); }
  Status check(const std::string& name, const std::vector<int64_t>& shape) const override;
  Status read_f32(const std::string& name, const std::vector<int64_t>& shape,
                  float* dst) const override;
  Result<std::optional<StoredTensor>> stored(const std::string& name,
                                             const std::vector<int64_t>& shape) const override;
  Result<size_t> stored_nbytes(const std::string& name) const override;

 private:
  std::unique_ptr<Checkpoint> checkpoint_;
  std::string dir_;
};

// `shape` as StoredTensor rows (rows, values per row); a 0-D tensor is one row of one value.
std::pair<int64_t, int64_t> stored_rows(const std::vector<int64_t>& shape);
// Converts an f32 / f16 / bf16 tensor to f32 into dst[0, info.numel()); Unimplemented for
// other dtypes.
Status tensor_to_f32(const TensorInfo& info, float* dst);

// "[a, b, c]", as weight errors print shapes.
std::string shape_to_string(const std::vector<int64_t>& shape);

}  // namespace sgl::model
