// Buffer ownership.
#include "core/buffer.h"

#include <utility>

namespace sgl {

Buffer::Buffer(Allocator& allocator, DType dtype, std::span<const int64_t> shape)
    : allocator_(&allocator) {
  Tensor probe(nullptr, dtype, shape, allocator.device());
  void* data = allocator.allocate(probe.nbytes());
  view_ = Tensor(data, dtype, shape, allocator.device());
}

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& other) noexcept
    : allocator_(std::exchange(other.allocator_, nullptr)), view_(std::exchange(other.view_, {})) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    allocator_ = std::exchange(other.allocator_, nullptr);
    view_ = std::exchange(other.view_, {});
  }
  return *this;
}

void Buffer::release() {
  if (allocator_ != nullptr && view_.raw() != nullptr) allocator_->deallocate(view_.raw());
  allocator_ = nullptr;
  view_ = {};
}

}  // namespace sgl
