// ReqToTokenPool: one row per running request mapping token position -> KV slot (host metadata).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/status.h"

namespace sgl::cache {

class ReqToTokenPool {
 public:
  // `size` request rows of `max_context_len` slots each.
  ReqToTokenPool(int32_t size, int32_t max_context_len);

  // A free row index, or nullopt when all rows are taken.
  std::optional<int32_t> alloc();
  void free(int32_t row);

  // Writes `slots` at positions [start, start + slots.size()) of `row`.
  void write(int32_t row, int32_t start, std::span<const int32_t> slots);
  std::span<const int32_t> row(int32_t row) const;

  int32_t size() const { return size_; }
  int32_t max_context_len() const { return max_context_len_; }
  int32_t available() const { return static_cast<int32_t>(free_rows_.size()); }
  // The whole table, i32 [size, max_context_len] row-major.
  int32_t* table() { return table_.data(); }
  const int32_t* table() const { return table_.data(); }

  // Free rows are distinct and in range, and used + free == size.
  Status check_integrity() const;

 private:
  int32_t size_;
  int32_t max_context_len_;
  std::vector<int32_t> table_;
  std::vector<int32_t> free_rows_;
  std::vector<bool> in_use_;
};

}  // namespace sgl::cache
