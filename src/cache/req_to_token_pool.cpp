// ReqToTokenPool rows.
#include "cache/req_to_token_pool.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/check.h"

namespace sgl::cache {

ReqToTokenPool::ReqToTokenPool(int32_t size, int32_t max_context_len)
    : table_(size, max_context_len), in_use_(size, false) {
  free_rows_.reserve(size);
  for (int32_t i = size - 1; i >= 0; --i) free_rows_.push_back(i);  // pops 0 first
}

std::optional<int32_t> ReqToTokenPool::alloc() {
  if (free_rows_.empty()) return std::nullopt;
  const int32_t row = free_rows_.back();
  free_rows_.pop_back();
  in_use_[row] = true;
  return row;
}

void ReqToTokenPool::free(int32_t row) {
  SGL_CHECK(row >= 0 && row < size() && in_use_[row]) << "freeing row " << row << " not in use";
  in_use_[row] = false;
  free_rows_.push_back(row);
}

void ReqToTokenPool::write(int32_t row, int32_t start, std::span<const int32_t> slots) {
  SGL_CHECK(row >= 0 && row < size() && in_use_[row]) << "writing row " << row << " not in use";
  table_.write(row, start, slots);
  if (recording_) recorded_.add(row, start, slots);
}

ReqToTokenWrites ReqToTokenPool::take_writes() {
  ReqToTokenWrites out;
  std::swap(out, recorded_);
  return out;
}

Status ReqToTokenPool::check_integrity() const {
  const int32_t rows = size();
  std::vector<bool> seen(rows, false);
  for (int32_t row : free_rows_) {
    if (row < 0 || row >= rows)
      return internal_error("free row " + std::to_string(row) + " out of range");
    if (seen[row]) return internal_error("row " + std::to_string(row) + " freed twice");
    if (in_use_[row]) return internal_error("row " + std::to_string(row) + " both free and used");
    seen[row] = true;
  }
  const auto used = std::count(in_use_.begin(), in_use_.end(), true);
  if (used + static_cast<int64_t>(free_rows_.size()) != rows) {
    return internal_error("rows leaked: used " + std::to_string(used) + " + free " +
                          std::to_string(free_rows_.size()) + " != " + std::to_string(rows));
  }
  return Status::ok_status();
}

}  // namespace sgl::cache
