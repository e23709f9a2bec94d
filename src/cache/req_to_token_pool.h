// ReqToTokenPool: one row per running request mapping token position -> KV slot (host metadata).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "cache/req_to_token_table.h"
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
  std::span<const int32_t> row(int32_t row) const { return table_.row(row); }

  int32_t size() const { return table_.size(); }
  int32_t max_context_len() const { return table_.max_context_len(); }
  int32_t available() const { return static_cast<int32_t>(free_rows_.size()); }
  const ReqToTokenTable& table() const { return table_; }

  // From now on every write() is also recorded for take_writes(), so that a reader on another
  // thread can keep its own copy of the table instead of sharing this one (the scheduler's pool:
  // the runner reads rows while the scheduler rewrites them for the next batch).
  void record_writes() { recording_ = true; }
  // The writes recorded since the last call, in order.
  ReqToTokenWrites take_writes();

  // Free rows are distinct and in range, and used + free == size.
  Status check_integrity() const;

 private:
  ReqToTokenTable table_;
  std::vector<int32_t> free_rows_;
  std::vector<bool> in_use_;
  bool recording_ = false;
  ReqToTokenWrites recorded_;
};

}  // namespace sgl::cache
