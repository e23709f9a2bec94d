// MergeTable: insertion and growth of the open-addressing pair table.
#include "tokenizer/merge_table.h"

#include <utility>

namespace sgl::tokenizer {

void MergeTable::reserve(size_t count) {
  size_t capacity = 16;
  while (capacity < count * 2) capacity <<= 1;
  if (capacity <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  size_ = 0;
  for (const Slot& slot : old) {
    if (slot.key != kEmpty) {
      insert(static_cast<int32_t>(slot.key >> 32), static_cast<int32_t>(slot.key & 0xFFFFFFFFu),
             slot.info);
    }
  }
}

void MergeTable::grow() { reserve(size_ + 1); }

void MergeTable::insert(int32_t left, int32_t right, MergeInfo info) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const uint64_t key = make_key(left, right);
  for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
    Slot& slot = slots_[i];
    if (slot.key == key) {
      slot.info = info;
      return;
    }
    if (slot.key == kEmpty) {
      slot.key = key;
      slot.info = info;
      ++size_;
      return;
    }
  }
}

}  // namespace sgl::tokenizer
