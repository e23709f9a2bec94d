// ReqToTokenTable rows and their write lists.
#include "cache/req_to_token_table.h"

#include <algorithm>

#include "core/check.h"

namespace sgl::cache {

void ReqToTokenWrites::add(int32_t row, int32_t start, std::span<const int32_t> values) {
  if (values.empty()) return;
  writes.push_back({row, start, static_cast<int32_t>(values.size())});
  slots.insert(slots.end(), values.begin(), values.end());
}

ReqToTokenTable::ReqToTokenTable(int32_t size, int32_t max_context_len)
    : size_(size),
      max_context_len_(max_context_len),
      table_(static_cast<size_t>(size) * max_context_len, 0) {
  SGL_CHECK(size > 0 && max_context_len > 0)
      << "ReqToTokenTable(" << size << ", " << max_context_len << ")";
}

void ReqToTokenTable::write(int32_t row, int32_t start, std::span<const int32_t> slots) {
  SGL_CHECK(row >= 0 && row < size_) << "row " << row;
  SGL_CHECK(start >= 0 && start + static_cast<int64_t>(slots.size()) <= max_context_len_)
      << "positions [" << start << ", " << start + slots.size() << ") beyond context "
      << max_context_len_;
  std::copy(slots.begin(), slots.end(),
            table_.begin() + static_cast<size_t>(row) * max_context_len_ + start);
}

void ReqToTokenTable::apply(const ReqToTokenWrites& writes) {
  size_t offset = 0;
  for (const ReqToTokenWrites::Write& w : writes.writes) {
    SGL_CHECK_LE(offset + w.count, writes.slots.size());
    write(w.row, w.start, std::span(writes.slots).subspan(offset, w.count));
    offset += w.count;
  }
}

std::span<const int32_t> ReqToTokenTable::row(int32_t row) const {
  SGL_CHECK(row >= 0 && row < size_) << "row " << row;
  return {table_.data() + static_cast<size_t>(row) * max_context_len_,
          static_cast<size_t>(max_context_len_)};
}

}  // namespace sgl::cache
