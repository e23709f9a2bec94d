// KvPool allocation.
#include "attention/kv_pool.h"

#include <cmath>

namespace sgl::attention {

KvPool::KvPool(Allocator& allocator, const KvPoolShape& shape) : shape_(shape) {
  SGL_CHECK(shape.num_layers > 0 && shape.num_slots > 1 && shape.num_kv_heads > 0 &&
            shape.head_dim > 0)
      << "KvPool: bad shape";
  SGL_CHECK(shape.dtype == DType::kF32 || shape.dtype == DType::kBF16 ||
            shape.dtype == DType::kF16 || is_fp8_kv(shape.dtype))
      << "KvPool: no KV cache of dtype " << dtype_name(shape.dtype);
  scales_.resize(shape.num_layers);
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

void KvPool::set_scales(int layer, KvScales scales) {
  SGL_CHECK(is_fp8_kv(shape_.dtype))
      << "KV scales set on a " << dtype_name(shape_.dtype) << " pool";
  SGL_CHECK(layer >= 0 && layer < shape_.num_layers) << "KV scales of layer " << layer;
  SGL_CHECK(std::isfinite(scales.k) && std::isfinite(scales.v) && scales.k > 0 && scales.v > 0)
      << "KV scales must be positive and finite, got " << scales.k << ", " << scales.v;
  scales_[layer] = scales;
}

}  // namespace sgl::attention
