// Tensor: a non-owning strided view (data pointer, dtype, shape, strides, device).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "core/check.h"
#include "core/device.h"
#include "core/dtype.h"

namespace sgl {

class Tensor {
 public:
  static constexpr int kMaxDims = 4;

  Tensor() = default;
  // Contiguous row-major view over `data`.
  Tensor(void* data, DType dtype, std::span<const int64_t> shape, Device device = Device::cpu());
  Tensor(void* data, DType dtype, std::initializer_list<int64_t> shape,
         Device device = Device::cpu())
      : Tensor(data, dtype, std::span<const int64_t>(shape.begin(), shape.size()), device) {}

  bool defined() const { return ndim_ > 0; }
  void* raw() const { return data_; }
  template <typename T>
  T* data() const {
    SGL_CHECK(dtype_ == dtype_of<T>()) << "tensor is " << dtype_name(dtype_);
    return static_cast<T*>(data_);
  }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  int ndim() const { return ndim_; }
  int64_t size(int dim) const;
  int64_t stride(int dim) const;
  std::span<const int64_t> shape() const { return {shape_.data(), static_cast<size_t>(ndim_)}; }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool is_contiguous() const;
  std::string shape_string() const;  // "[3, 4]"

  // Rows [start, start + length) along dim 0; same strides.
  Tensor slice_rows(int64_t start, int64_t length) const;
  // Columns [start, start + length) of the last dim; keeps the row stride (non-contiguous).
  Tensor slice_last(int64_t start, int64_t length) const;
  // Splits the last dim into [heads, last / heads], keeping the outer strides:
  // a row-strided [T, H * D] view becomes [T, H, D].
  Tensor split_heads(int64_t heads) const;
  // Same memory, new shape; requires a contiguous tensor with the same numel.
  Tensor reshape(std::initializer_list<int64_t> shape) const;
  Tensor reshape(std::span<const int64_t> shape) const;

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::kF32;
  Device device_;
  int ndim_ = 0;
  std::array<int64_t, kMaxDims> shape_{};
  std::array<int64_t, kMaxDims> strides_{};  // in elements
};

}  // namespace sgl
