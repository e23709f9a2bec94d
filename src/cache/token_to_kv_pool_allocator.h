// TokenToKvPoolAllocator: hands out KV slots (page size 1); slot 0 is the reserved dummy slot.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/status.h"

namespace sgl::cache {

class TokenToKvPoolAllocator {
 public:
  // Slots 1 .. num_slots - 1 are allocatable; slot 0 absorbs writes of padded batch entries.
  explicit TokenToKvPoolAllocator(int32_t num_slots);

  // `n` slots, or nullopt (and nothing taken) when fewer are free.
  std::optional<std::vector<int32_t>> alloc(int32_t n);
  // One slot (the one alloc(1) would give), or nullopt when none is free.
  std::optional<int32_t> alloc_one();
  void free(std::span<const int32_t> slots);

  int32_t available() const { return static_cast<int32_t>(free_slots_.size()); }
  int32_t capacity() const { return num_slots_ - 1; }
  int32_t num_slots() const { return num_slots_; }

  // Free slots distinct, in range, never slot 0, and free + used == capacity.
  Status check_integrity() const;

 private:
  int32_t num_slots_;
  std::vector<int32_t> free_slots_;
  std::vector<bool> in_use_;
};

}  // namespace sgl::cache
