// KvPool: the paged KV cache memory, K and V per layer, indexed by KV slot (page size 1).
#pragma once

#include <vector>

#include "core/allocator.h"
#include "core/buffer.h"

namespace sgl::attention {

struct KvPoolShape {
  int64_t num_layers = 0;
  int64_t num_slots = 0;  // slot 0 is reserved as the dummy slot padded batches write to
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  DType dtype = DType::kF32;

  // Bytes one token's K and V take across all layers.
  size_t bytes_per_token() const {
    return static_cast<size_t>(2 * num_layers * num_kv_heads * head_dim) * dtype_size(dtype);
  }
};

class KvPool {
 public:
  // Allocates (uninitialized) K and V for every layer from `allocator`, which must outlive this.
  KvPool(Allocator& allocator, const KvPoolShape& shape);

  const KvPoolShape& shape() const { return shape_; }
  const Tensor& k(int layer) const { return k_[layer].tensor(); }  // [num_slots, kv_heads, D]
  const Tensor& v(int layer) const { return v_[layer].tensor(); }  // [num_slots, kv_heads, D]

 private:
  KvPoolShape shape_;
  std::vector<Buffer> k_;
  std::vector<Buffer> v_;
};

}  // namespace sgl::attention
