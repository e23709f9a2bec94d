// CPU paged attention: each query row attends to its request's tokens [0, its position].
#include "attention/cpu/cpu_attention_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace sgl::attention {

CpuAttentionBackend::CpuAttentionBackend(const AttentionConfig& config, KvPool& kv_pool)
    : config_(config), kv_pool_(kv_pool) {
  SGL_CHECK(kv_pool.shape().dtype == DType::kF32) << "CPU attention needs an f32 KV pool";
  SGL_CHECK_EQ(kv_pool.shape().num_kv_heads, config.num_kv_heads);
  SGL_CHECK_EQ(kv_pool.shape().head_dim, config.head_dim);
}

void CpuAttentionBackend::store_kv(int layer, const Tensor& k, const Tensor& v,
                                   const ForwardBatch& fb) {
  const int64_t heads = config_.num_kv_heads, dim = config_.head_dim;
  const int32_t* loc = fb.out_cache_loc.data<int32_t>();
  float* k_cache = kv_pool_.k(layer).data<float>();
  float* v_cache = kv_pool_.v(layer).data<float>();
  const int64_t num_slots = kv_pool_.shape().num_slots;
  for (int64_t t = 0; t < fb.num_tokens; ++t) {
    SGL_CHECK(loc[t] >= 0 && loc[t] < num_slots) << "KV slot " << loc[t] << " out of range";
    for (int64_t h = 0; h < heads; ++h) {
      std::memcpy(k_cache + (loc[t] * heads + h) * dim,
                  k.data<float>() + t * k.stride(0) + h * k.stride(1), dim * sizeof(float));
      std::memcpy(v_cache + (loc[t] * heads + h) * dim,
                  v.data<float>() + t * v.stride(0) + h * v.stride(1), dim * sizeof(float));
    }
  }
}

void CpuAttentionBackend::forward(int layer, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const ForwardBatch& fb) {
  store_kv(layer, k, v, fb);
  const int64_t q_heads = config_.num_q_heads, kv_heads = config_.num_kv_heads;
  const int64_t dim = config_.head_dim, group = q_heads / kv_heads;
  const float* k_cache = kv_pool_.k(layer).data<float>();
  const float* v_cache = kv_pool_.v(layer).data<float>();
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
        const float* kv = k_cache + (slots[j] * kv_heads + kvh) * dim;
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
        const float* vv = v_cache + (slots[j] * kv_heads + kvh) * dim;
        if (tree_mask != nullptr && scores[j] == 0.f) continue;  // masked
        const float p = scores[j] / denom;
        for (int64_t d = 0; d < dim; ++d) o[d] += p * vv[d];
      }
    }
  }
}

}  // namespace sgl::attention
