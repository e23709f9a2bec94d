// ReqToTokenTable: the KV slot of every position of every request row, and ReqToTokenWrites,
// the ordered writes that bring another copy of a table up to date.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace sgl::cache {

// Writes into a ReqToTokenTable, in order: write i puts the next `count` values of `slots` at
// positions [start, start + count) of `row`.
struct ReqToTokenWrites {
  struct Write {
    int32_t row = 0;
    int32_t start = 0;
    int32_t count = 0;
  };
  std::vector<Write> writes;
  std::vector<int32_t> slots;  // every write's slots, one after another

  bool empty() const { return writes.empty(); }
  void add(int32_t row, int32_t start, std::span<const int32_t> values);
};

// i32 [size, max_context_len], row-major. Not thread-safe: one thread writes and reads it.
class ReqToTokenTable {
 public:
  ReqToTokenTable(int32_t size, int32_t max_context_len);

  // Writes `slots` at positions [start, start + slots.size()) of `row`.
  void write(int32_t row, int32_t start, std::span<const int32_t> slots);
  // Applies `writes` in order.
  void apply(const ReqToTokenWrites& writes);
  std::span<const int32_t> row(int32_t row) const;

  int32_t size() const { return size_; }
  int32_t max_context_len() const { return max_context_len_; }
  const int32_t* data() const { return table_.data(); }

 private:
  int32_t size_;
  int32_t max_context_len_;
  std::vector<int32_t> table_;
};

}  // namespace sgl::cache
