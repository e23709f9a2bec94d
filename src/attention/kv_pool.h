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
  // The stored dtype: the compute dtype, or f8e4m3 / f8e5m2 (--kv-cache-dtype), each value
  // stored as itself / its layer's scale (KvScales).
  DType dtype = DType::kF32;

  // Bytes one token's K and V take across all layers.
  size_t bytes_per_token() const {
    return static_cast<size_t>(2 * num_layers * num_kv_heads * head_dim) * dtype_size(dtype);
  }
};

// Whether a pool of this dtype keeps K and V as FP8 codes.
inline bool is_fp8_kv(DType dtype) { return dtype == DType::kF8E4M3 || dtype == DType::kF8E5M2; }

// One layer's FP8 scales: a stored code c reads as float(c) * scale (1 for pools in the compute
// dtype).
struct KvScales {
  float k = 1.f;
  float v = 1.f;
};

// One layer's cache as the attention kernels take it.
struct LayerKv {
  Tensor k;  // [num_slots, kv_heads, D]
  Tensor v;  // [num_slots, kv_heads, D]
  KvScales scales;
};

class KvPool {
 public:
  // Allocates (uninitialized) K and V for every layer from `allocator`, which must outlive this.
  KvPool(Allocator& allocator, const KvPoolShape& shape);

  const KvPoolShape& shape() const { return shape_; }
  const Tensor& k(int layer) const { return k_[layer].tensor(); }  // [num_slots, kv_heads, D]
  const Tensor& v(int layer) const { return v_[layer].tensor(); }  // [num_slots, kv_heads, D]
  const KvScales& scales(int layer) const { return scales_[layer]; }
  LayerKv layer(int layer) const { return {k(layer), v(layer), scales_[layer]}; }
  // A checkpoint's scales (or a test's); positive and finite, for FP8 pools only.
  void set_scales(int layer, KvScales scales);

 private:
  KvPoolShape shape_;
  std::vector<Buffer> k_;
  std::vector<Buffer> v_;
  std::vector<KvScales> scales_;
};

}  // namespace sgl::attention
