// KV slot allocation.
#include "cache/token_to_kv_pool_allocator.h"

#include <algorithm>
#include <string>

#include "core/check.h"

namespace sgl::cache {

TokenToKvPoolAllocator::TokenToKvPoolAllocator(int32_t num_slots)
    : num_slots_(num_slots), in_use_(num_slots, false) {
  SGL_CHECK_GT(num_slots, 1);
  free_slots_.reserve(num_slots - 1);
  for (int32_t s = num_slots - 1; s >= 1; --s) free_slots_.push_back(s);  // pops 1 first
}

std::optional<std::vector<int32_t>> TokenToKvPoolAllocator::alloc(int32_t n) {
  SGL_CHECK_GE(n, 0);
  if (n > available()) return std::nullopt;
  std::vector<int32_t> out(free_slots_.end() - n, free_slots_.end());
  std::reverse(out.begin(), out.end());
  free_slots_.resize(free_slots_.size() - n);
  for (int32_t s : out) in_use_[s] = true;
  return out;
}

std::optional<int32_t> TokenToKvPoolAllocator::alloc_one() {
  if (free_slots_.empty()) return std::nullopt;
  const int32_t slot = free_slots_.back();
  free_slots_.pop_back();
  in_use_[slot] = true;
  return slot;
}

void TokenToKvPoolAllocator::free(std::span<const int32_t> slots) {
  for (int32_t s : slots) {
    SGL_CHECK(s >= 1 && s < num_slots_ && in_use_[s])
        << "freeing KV slot " << s << " that is not in use";
    in_use_[s] = false;
    free_slots_.push_back(s);
  }
}

Status TokenToKvPoolAllocator::check_integrity() const {
  std::vector<bool> seen(num_slots_, false);
  for (int32_t s : free_slots_) {
    if (s < 1 || s >= num_slots_)
      return internal_error("free slot " + std::to_string(s) + " out of range");
    if (seen[s]) return internal_error("slot " + std::to_string(s) + " free twice");
    if (in_use_[s]) return internal_error("slot " + std::to_string(s) + " both free and used");
    seen[s] = true;
  }
  const auto used = std::count(in_use_.begin(), in_use_.end(), true);
  if (used + static_cast<int64_t>(free_slots_.size()) != capacity()) {
    return internal_error("KV slots leaked: used " + std::to_string(used) + " + free " +
                          std::to_string(free_slots_.size()) + " != " + std::to_string(capacity()));
  }
  return Status::ok_status();
}

}  // namespace sgl::cache
