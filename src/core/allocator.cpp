// Host allocator.
#include "core/allocator.h"

#include <cstdlib>

#include "core/check.h"

namespace sgl {

void* CpuAllocator::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  constexpr size_t kAlign = 64;
  void* ptr = std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  SGL_CHECK(ptr != nullptr) << "host allocation of " << bytes << " bytes failed";
  return ptr;
}

void CpuAllocator::deallocate(void* ptr) { std::free(ptr); }

Allocator& cpu_allocator() {
  // NOTE: stateless, so sharing one instance is not hidden global state.
  static CpuAllocator instance;
  return instance;
}

}  // namespace sgl
