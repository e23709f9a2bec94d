// Buffer: owning, move-only device or host memory with a contiguous Tensor view of it.
#pragma once

#include <initializer_list>
#include <span>

#include "core/allocator.h"
#include "core/tensor.h"

namespace sgl {

class Buffer {
 public:
  Buffer() = default;
  // Uninitialized memory of `shape` from `allocator` (which must outlive the Buffer).
  Buffer(Allocator& allocator, DType dtype, std::span<const int64_t> shape);
  Buffer(Allocator& allocator, DType dtype, std::initializer_list<int64_t> shape)
      : Buffer(allocator, dtype, std::span<const int64_t>(shape.begin(), shape.size())) {}
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  const Tensor& tensor() const { return view_; }
  operator const Tensor&() const { return view_; }  // NOLINT(google-explicit-constructor)
  template <typename T>
  T* data() const {
    return view_.data<T>();
  }
  size_t nbytes() const { return view_.nbytes(); }

 private:
  void release();
  Allocator* allocator_ = nullptr;
  Tensor view_;
};

}  // namespace sgl
