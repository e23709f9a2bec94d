// Pointer alignment checks (vectorized and TMA paths need 16-byte aligned addresses).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sgl {

inline bool is_aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

}  // namespace sgl
