// KvPool allocation.
#include "attention/kv_pool.h"

namespace sgl::attention {

KvPool::KvPool(Allocator& allocator, const KvPoolShape& shape) : shape_(shape) {
  SGL_CHECK(shape.num_layers > 0 && shape.num_slots > 1 && shape.num_kv_heads > 0 &&
            shape.head_dim > 0)
      << "KvPool: bad shape";
  k_.reserve(shape.num_layers);
  v_.reserve(shape.num_layers);
  for (int64_t l = 0; l < shape.num_layers; ++l) {
    k_.emplace_back(
        allocator, shape.dtype,
        std::initializer_list<int64_t>{shape.num_slots, shape.num_kv_heads, shape.head_dim});
    v_.emplace_back(
        allocator, shape.dtype,
        std::initializer_list<int64_t>{shape.num_slots, shape.num_kv_heads, shape.head_dim});
  }
}

}  // namespace sgl::attention
