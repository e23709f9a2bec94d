// MergeTable: open-addressing hash map from a BPE token-id pair to its merge rank and result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sgl::tokenizer {

struct MergeInfo {
  uint32_t rank = 0;
  int32_t new_id = -1;
};

class MergeTable {
 public:
  // Sizes the table for `count` entries (load factor <= 0.5).
  void reserve(size_t count);
  // Inserts or overwrites the entry for (left, right).
  void insert(int32_t left, int32_t right, MergeInfo info);
  // The merge of (left, right), or nullptr.
  const MergeInfo* find(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    const uint64_t key = make_key(left, right);
    for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.key == key) return &slot.info;
      if (slot.key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    MergeInfo info;
  };
  static uint64_t make_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  static size_t hash(uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return static_cast<size_t>(key);
  }
  void grow();

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace sgl::tokenizer
