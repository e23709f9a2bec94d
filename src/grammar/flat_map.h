// A small open-addressing hash map from uint64 keys to int32 values (linear probing), for the
// matcher's hot lookups: frames, frame sets and byte transitions.
#pragma once

#include <cstdint>
#include <vector>

namespace sgl::grammar {

class FlatMap64 {
 public:
  explicit FlatMap64(size_t capacity = 64) { reset(capacity); }

  // The value for `key`, or -1.
  int32_t find(uint64_t key) const {
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (values_[i] < 0) return -1;
      if (keys_[i] == key) return values_[i];
    }
  }
  // Inserts (or overwrites) key -> value (value >= 0).
  void insert(uint64_t key, int32_t value) {
    if ((size_ + 1) * 4 > values_.size() * 3) grow();
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (values_[i] < 0) {
        keys_[i] = key;
        values_[i] = value;
        ++size_;
        return;
      }
      if (keys_[i] == key) {
        values_[i] = value;
        return;
      }
    }
  }
  size_t size() const { return size_; }
  void clear() { reset(64); }

 private:
  static uint64_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
  }
  size_t slot(uint64_t key) const { return mix(key) & mask_; }
  void reset(size_t capacity) {
    size_t cap = 16;
    while (cap < capacity) cap *= 2;
    keys_.assign(cap, 0);
    values_.assign(cap, -1);
    mask_ = cap - 1;
    size_ = 0;
  }
  void grow() {
    std::vector<uint64_t> keys = std::move(keys_);
    std::vector<int32_t> values = std::move(values_);
    reset(values.size() * 2);
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] >= 0) insert(keys[i], values[i]);
    }
  }

  std::vector<uint64_t> keys_;
  std::vector<int32_t> values_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace sgl::grammar
