// Tensor view arithmetic.
#include "core/tensor.h"

#include <sstream>

namespace sgl {

Tensor::Tensor(void* data, DType dtype, std::span<const int64_t> shape, Device device)
    : data_(data), dtype_(dtype), device_(device), ndim_(static_cast<int>(shape.size())) {
  SGL_CHECK(ndim_ >= 1 && ndim_ <= kMaxDims) << "rank " << ndim_;
  int64_t stride = 1;
  for (int d = ndim_ - 1; d >= 0; --d) {
    SGL_CHECK_GE(shape[d], 0);
    shape_[d] = shape[d];
    strides_[d] = stride;
    stride *= shape[d];
  }
}

int64_t Tensor::size(int dim) const {
  if (dim < 0) dim += ndim_;
  SGL_CHECK(dim >= 0 && dim < ndim_) << "dim " << dim << " of rank " << ndim_;
  return shape_[dim];
}

int64_t Tensor::stride(int dim) const {
  if (dim < 0) dim += ndim_;
  SGL_CHECK(dim >= 0 && dim < ndim_) << "dim " << dim << " of rank " << ndim_;
  return strides_[dim];
}

int64_t Tensor::numel() const {
  if (ndim_ == 0) return 0;
  int64_t n = 1;
  for (int d = 0; d < ndim_; ++d) n *= shape_[d];
  return n;
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int d = ndim_ - 1; d >= 0; --d) {
    if (shape_[d] != 1 && strides_[d] != expected) return false;
    expected *= shape_[d];
  }
  return true;
}

std::string Tensor::shape_string() const {
  std::ostringstream out;
  out << "[";
  for (int d = 0; d < ndim_; ++d) out << (d ? ", " : "") << shape_[d];
  out << "]";
  return out.str();
}

Tensor Tensor::slice_rows(int64_t start, int64_t length) const {
  SGL_CHECK(start >= 0 && length >= 0 && start + length <= size(0))
      << "rows [" << start << ", " << start + length << ") of " << shape_string();
  Tensor out = *this;
  out.shape_[0] = length;
  out.data_ = static_cast<char*>(data_) + start * strides_[0] * dtype_size(dtype_);
  return out;
}

Tensor Tensor::slice_last(int64_t start, int64_t length) const {
  int last = ndim_ - 1;
  SGL_CHECK(start >= 0 && length >= 0 && start + length <= shape_[last])
      << "columns [" << start << ", " << start + length << ") of " << shape_string();
  Tensor out = *this;
  out.shape_[last] = length;
  out.data_ = static_cast<char*>(data_) + start * strides_[last] * dtype_size(dtype_);
  return out;
}

Tensor Tensor::split_heads(int64_t heads) const {
  const int last = ndim_ - 1;
  SGL_CHECK(ndim_ < kMaxDims && heads > 0 && shape_[last] % heads == 0 && strides_[last] == 1)
      << "split_heads(" << heads << ") of " << shape_string();
  Tensor out = *this;
  out.ndim_ = ndim_ + 1;
  out.shape_[last] = heads;
  out.shape_[last + 1] = shape_[last] / heads;
  out.strides_[last] = shape_[last] / heads;
  out.strides_[last + 1] = 1;
  return out;
}

Tensor Tensor::reshape(std::initializer_list<int64_t> shape) const {
  return reshape(std::span<const int64_t>(shape.begin(), shape.size()));
}

Tensor Tensor::reshape(std::span<const int64_t> shape) const {
  SGL_CHECK(is_contiguous()) << "reshape of a non-contiguous tensor " << shape_string();
  Tensor out(data_, dtype_, shape, device_);
  SGL_CHECK_EQ(out.numel(), numel())
      << "reshape " << shape_string() << " -> " << out.shape_string();
  return out;
}

}  // namespace sgl
