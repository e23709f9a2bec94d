// TensorSlice: a tensor-parallel shard's range of a stored tensor, as stored bytes or f32 values.
#include <algorithm>
#include <cstring>

#include "model/weight_source.h"

namespace sgl::model {

std::vector<int64_t> TensorSlice::shape_of(const std::vector<int64_t>& full) const {
  std::vector<int64_t> out = full;
  if (!whole()) out[static_cast<size_t>(dim)] = size;
  return out;
}

Status check_slice(const std::string& name, const std::vector<int64_t>& full,
                   const TensorSlice& slice) {
  if (slice.whole()) return Status::ok_status();
  const bool dim_ok = (slice.dim == 0 && !full.empty()) || (slice.dim == 1 && full.size() == 2);
  if (!dim_ok || slice.start < 0 || slice.size < 0 ||
      slice.start + slice.size > full[static_cast<size_t>(slice.dim)]) {
    return invalid_argument("weight '" + name + "' of shape " + shape_to_string(full) +
                            " has no shard [" + std::to_string(slice.start) + ", " +
                            std::to_string(slice.start + slice.size) + ") along dim " +
                            std::to_string(slice.dim));
  }
  return Status::ok_status();
}

Result<StoredTensor> narrow_stored(StoredTensor t, const std::vector<int64_t>& full,
                                   const TensorSlice& slice, const std::string& name) {
  SGL_RETURN_IF_ERROR(check_slice(name, full, slice));
  if (slice.whole()) return t;
  if (slice.dim == 0) {
    if (t.row_order.empty()) {
      t.data += static_cast<size_t>(slice.start) * t.stride();
    } else {
      t.row_order = std::vector<int64_t>(t.row_order.begin() + slice.start,
                                         t.row_order.begin() + slice.start + slice.size);
    }
    t.rows = slice.size;
    return t;
  }
  // Columns: each row keeps a byte range, which a block format can only cut at whole blocks.
  const int64_t block = kernels::stored_block_elems(t.format);
  if (slice.start % block != 0 || slice.size % block != 0) {
    return invalid_argument(
        "weight '" + name + "' of shape " + shape_to_string(full) + " is stored in blocks of " +
        std::to_string(block) + " values per row: its tensor-parallel shard of columns [" +
        std::to_string(slice.start) + ", " + std::to_string(slice.start + slice.size) +
        ") splits a block (choose a --tp-size whose shards are whole blocks)");
  }
  const size_t stride = t.stride();
  t.data += kernels::stored_bytes(t.format, slice.start);
  t.row_bytes = kernels::stored_bytes(t.format, slice.size);
  t.row_stride = stride;
  return t;
}

void copy_slice_f32(const float* src, const std::vector<int64_t>& full, const TensorSlice& slice,
                    float* dst) {
  int64_t numel = 1;
  for (int64_t d : full) numel *= d;
  if (slice.whole()) {
    std::copy(src, src + numel, dst);
    return;
  }
  const int64_t rows = full[0], per_row = rows == 0 ? 0 : numel / rows;
  if (slice.dim == 0) {
    std::copy(src + slice.start * per_row, src + (slice.start + slice.size) * per_row, dst);
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = src + r * per_row + slice.start;
    std::copy(row, row + slice.size, dst + r * slice.size);
  }
}

}  // namespace sgl::model
