// CPU paged attention: each query row attends to its request's tokens [0, its position].
#include "attention/cpu/cpu_attention_backend.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/fp8.h"

namespace sgl::attention {
namespace {

// Rows of one layer's K or V cache as f32: the stored rows themselves, or FP8 codes widened.
class KvRows {
 public:
  KvRows(const Tensor& cache, float scale, int64_t kv_heads, int64_t dim)
      : base_(static_cast<const uint8_t*>(cache.raw())),
        dtype_(cache.dtype()),
        scale_(scale),
        kv_heads_(kv_heads),
        dim_(dim) {}

  // Row (slot, head); FP8 rows are widened into `scratch` ([dim]).
  const float* row(int64_t slot, int64_t head, float* scratch) const {
    const int64_t index = (slot * kv_heads_ + head) * dim_;
    if (dtype_ == DType::kF32) return reinterpret_cast<const float*>(base_) + index;
    const std::array<float, 256>& table = fp8_table(dtype_);
    for (int64_t d = 0; d < dim_; ++d) scratch[d] = table[base_[index + d]] * scale_;
    return scratch;
  }

 private:
  const uint8_t* base_;
  DType dtype_;
  float scale_;
  int64_t kv_heads_, dim_;
};

// Writes `dim` values of src to dst, in the cache's dtype (FP8: src / scale, rounded).
void store_row(const float* src, void* cache, DType dtype, int64_t index, int64_t dim,
               float scale) {
  if (dtype == DType::kF32) {
    std::memcpy(static_cast<float*>(cache) + index, src, dim * sizeof(float));
    return;
  }
  uint8_t* dst = static_cast<uint8_t*>(cache) + index;
  const float inverse = 1.f / scale;
  for (int64_t d = 0; d < dim; ++d) dst[d] = float_to_fp8(dtype, src[d] * inverse);
}

}  // namespace

CpuAttentionBackend::CpuAttentionBackend(const AttentionConfig& config, KvPool& kv_pool)
    : config_(config), kv_pool_(kv_pool) {
  SGL_CHECK(kv_pool.shape().dtype == DType::kF32 || is_fp8_kv(kv_pool.shape().dtype))
      << "CPU attention needs an f32 or FP8 KV pool";
  SGL_CHECK_EQ(kv_pool.shape().num_kv_heads, config.num_kv_heads);
  SGL_CHECK_EQ(kv_pool.shape().head_dim, config.head_dim);
}

void CpuAttentionBackend::store_kv(int layer, const Tensor& k, const Tensor& v,
                                   const ForwardBatch& fb) {
  const int64_t heads = config_.num_kv_heads, dim = config_.head_dim;
  const int32_t* loc = fb.out_cache_loc.data<int32_t>();
  const Tensor& k_cache = kv_pool_.k(layer);
  const Tensor& v_cache = kv_pool_.v(layer);
  const DType dtype = kv_pool_.shape().dtype;
  const KvScales scales = kv_pool_.scales(layer);
  const int64_t num_slots = kv_pool_.shape().num_slots;
  for (int64_t t = 0; t < fb.num_tokens; ++t) {
    SGL_CHECK(loc[t] >= 0 && loc[t] < num_slots) << "KV slot " << loc[t] << " out of range";
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t index = (loc[t] * heads + h) * dim;
      store_row(k.data<float>() + t * k.stride(0) + h * k.stride(1), k_cache.raw(), dtype, index,
                dim, scales.k);
      store_row(v.data<float>() + t * v.stride(0) + h * v.stride(1), v_cache.raw(), dtype, index,
                dim, scales.v);
    }
  }
}

void CpuAttentionBackend::forward(int layer, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const ForwardBatch& fb) {
  store_kv(layer, k, v, fb);
  const int64_t q_heads = config_.num_q_heads, kv_heads = config_.num_kv_heads;
  const int64_t dim = config_.head_dim, group = q_heads / kv_heads;
  const KvRows k_rows(kv_pool_.k(layer), kv_pool_.scales(layer).k, kv_heads, dim);
  const KvRows v_rows(kv_pool_.v(layer), kv_pool_.scales(layer).v, kv_heads, dim);
  const int32_t* table = fb.req_to_token.data<int32_t>();
  const int64_t table_stride = fb.req_to_token.stride(0);
  // A draft step's branches and an accepted path bring their own slots (kv_indices); a tree
  // verify masks its new tokens (each sees the prefix, its ancestors and itself).
  const int32_t* kv_indices = fb.kv_indices.defined() ? fb.kv_indices.data<int32_t>() : nullptr;
  const int32_t* kv_indptr = fb.kv_indices.defined() ? fb.kv_indptr.data<int32_t>() : nullptr;
  const uint64_t* tree_mask =
      fb.tree_mask.defined() ? static_cast<const uint64_t*>(fb.tree_mask.raw()) : nullptr;
  const float* qp = q.data<float>();
  float* op = out.data<float>();

  // One work item per (query token, q head).
  const int64_t items = static_cast<int64_t>(fb.num_tokens) * q_heads;
  // Threads only pay off once there is real work (thread wake-ups cost ~10 us each).
  const int64_t work = items * static_cast<int64_t>(fb.max_seq_len) * dim;
#pragma omp parallel if (work >= (1 << 20))
  {
    std::vector<float> scores;
    std::vector<float> widened(dim);  // an FP8 row as f32
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t t = item / q_heads, h = item % q_heads;
      // Find the request owning query row t.
      const auto& indptr = fb.qo_indptr_host;
      const int64_t b = std::upper_bound(indptr.begin(), indptr.end(), static_cast<int32_t>(t)) -
                        indptr.begin() - 1;
      const int64_t prefix = fb.extend_prefix_lens_host[b];
      // Causal: up to this token; a tree: every new token, masked.
      const int64_t kv_len =
          tree_mask != nullptr ? prefix + fb.extend_seq_lens_host[b] : prefix + (t - indptr[b]) + 1;
      const int32_t* slots = kv_indices != nullptr
                                 ? kv_indices + kv_indptr[b]
                                 : table + fb.req_pool_indices_host[b] * table_stride;
      const float* qv = qp + t * q.stride(0) + h * q.stride(1);
      const int64_t kvh = h / group;

      scores.resize(kv_len);
      float max_score = -INFINITY;
      for (int64_t j = 0; j < kv_len; ++j) {
        if (tree_mask != nullptr && j >= prefix && ((tree_mask[t] >> (j - prefix)) & 1) == 0) {
          scores[j] = -INFINITY;  // not an ancestor: weight 0
          continue;
        }
        const float* kv = k_rows.row(slots[j], kvh, widened.data());
        float dot = 0.f;
        for (int64_t d = 0; d < dim; ++d) dot += qv[d] * kv[d];
        scores[j] = dot * config_.scale;
        max_score = std::max(max_score, scores[j]);
      }
      float denom = 0.f;
      for (int64_t j = 0; j < kv_len; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        denom += scores[j];
      }
      float* o = op + t * q_heads * dim + h * dim;
      std::fill(o, o + dim, 0.f);
      for (int64_t j = 0; j < kv_len; ++j) {
        if (tree_mask != nullptr && scores[j] == 0.f) continue;  // masked
        const float* vv = v_rows.row(slots[j], kvh, widened.data());
        const float p = scores[j] / denom;
        for (int64_t d = 0; d < dim; ++d) o[d] += p * vv[d];
      }
    }
  }
}

}  // namespace sgl::attention
