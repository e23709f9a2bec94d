// CPU attention with a tree mask (EAGLE tree verify) and with per-request KV slot lists
// (kv_indices: a draft branch, an accepted path), against a brute-force softmax over exactly the
// keys each query may see: several requests, prefixes of 0 to 300 tokens, a chain, a star and
// random trees, GQA. A causal mask gives bit for bit the unmasked path's output.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "attention/cpu/cpu_attention_backend.h"
#include "attention/kv_pool.h"
#include "core/allocator.h"
#include "speculative/draft_tree.h"

namespace sgl::attention {
namespace {

constexpr int64_t kSlots = 2048;

struct Request {
  int32_t prefix;
  std::vector<int32_t> parents;  // the new tokens' tree ([extend - 1]); empty: causal
  int32_t extend;
};

struct Case {
  int64_t q_heads, kv_heads, dim;
  std::vector<Request> requests;
};

// One CPU batch over shuffled slots; returns the output, and fills `want` with the brute force.
std::vector<float> attend(const Case& c, bool masked, bool own_slots, std::vector<float>* want,
                          uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  CpuAllocator allocator;
  KvPool pool(allocator, {1, kSlots, c.kv_heads, c.dim, DType::kF32});
  for (const Tensor* t : {&pool.k(0), &pool.v(0)}) {
    float* p = t->data<float>();
    for (int64_t i = 0; i < t->numel(); ++i) p[i] = normal(rng);
  }
  std::vector<int32_t> order(kSlots - 1);
  std::iota(order.begin(), order.end(), 1);
  std::shuffle(order.begin(), order.end(), rng);
  const auto bs = static_cast<int32_t>(c.requests.size());
  int32_t max_seq = 0;
  for (const Request& r : c.requests) max_seq = std::max(max_seq, r.prefix + r.extend);
  // Request b's slots: a row of the table (row b) and the same list in kv_indices.
  std::vector<int32_t> table(static_cast<size_t>(bs * max_seq)), kv_indptr{0}, kv_indices;
  std::vector<int32_t> qo_indptr{0}, prefix, extend, rows, out_loc, positions;
  std::vector<uint64_t> mask;
  size_t next = 0;
  for (int32_t b = 0; b < bs; ++b) {
    const Request& r = c.requests[static_cast<size_t>(b)];
    const std::vector<uint64_t> tree =
        r.parents.empty() ? std::vector<uint64_t>{} : speculative::tree_mask(r.parents);
    for (int32_t j = 0; j < r.prefix + r.extend; ++j) {
      const int32_t slot = order[next++];
      table[static_cast<size_t>(b * max_seq + j)] = slot;
      kv_indices.push_back(slot);
      if (j >= r.prefix) {
        out_loc.push_back(slot);
        positions.push_back(j);
        const auto i = static_cast<size_t>(j - r.prefix);
        mask.push_back(tree.empty() ? ~uint64_t{0} >> (63 - i) : tree[i]);
      }
    }
    kv_indptr.push_back(static_cast<int32_t>(kv_indices.size()));
    qo_indptr.push_back(qo_indptr.back() + r.extend);
    prefix.push_back(r.prefix);
    extend.push_back(r.extend);
    rows.push_back(b);
  }
  const int64_t tokens = qo_indptr.back();
  std::vector<float> q(static_cast<size_t>(tokens * c.q_heads * c.dim));
  std::vector<float> k(static_cast<size_t>(tokens * c.kv_heads * c.dim)), v(k.size());
  for (auto* x : {&q, &k, &v}) {
    for (float& f : *x) f = normal(rng);
  }
  ForwardBatch fb;
  fb.mode = ForwardMode::kExtend;
  fb.batch_size = bs;
  fb.num_tokens = static_cast<int32_t>(tokens);
  fb.max_seq_len = max_seq;
  auto view = [](std::vector<int32_t>& x) {
    return Tensor(x.data(), DType::kI32, {static_cast<int64_t>(x.size())});
  };
  fb.out_cache_loc = view(out_loc);
  fb.positions = view(positions);
  fb.req_to_token = Tensor(table.data(), DType::kI32, {bs, max_seq});
  fb.qo_indptr_host = qo_indptr;
  fb.extend_prefix_lens_host = prefix;
  fb.extend_seq_lens_host = extend;
  fb.req_pool_indices_host = rows;
  if (own_slots) {
    fb.kv_indptr = view(kv_indptr);
    fb.kv_indices = view(kv_indices);
  }
  if (masked) {
    fb.tree_mask = Tensor(mask.data(), DType::kI64, {tokens});
    fb.tree_mask_host = mask;
  }
  const AttentionConfig config{c.q_heads, c.kv_heads, c.dim,
                               1.f / std::sqrt(static_cast<float>(c.dim))};
  CpuAttentionBackend backend(config, pool);
  std::vector<float> out(q.size(), NAN);
  backend.forward(0, Tensor(q.data(), DType::kF32, {tokens, c.q_heads, c.dim}),
                  Tensor(k.data(), DType::kF32, {tokens, c.kv_heads, c.dim}),
                  Tensor(v.data(), DType::kF32, {tokens, c.kv_heads, c.dim}),
                  Tensor(out.data(), DType::kF32, {tokens, c.q_heads * c.dim}), fb);
  if (want == nullptr) return out;
  // Brute force in double: query t sees the prefix and the new tokens its mask row names.
  want->assign(out.size(), 0.f);
  const float* kc = pool.k(0).data<float>();
  const float* vc = pool.v(0).data<float>();
  for (int32_t b = 0; b < bs; ++b) {
    const Request& r = c.requests[static_cast<size_t>(b)];
    for (int32_t i = 0; i < r.extend; ++i) {
      const int32_t t = qo_indptr[static_cast<size_t>(b)] + i;
      for (int64_t h = 0; h < c.q_heads; ++h) {
        const int64_t kvh = h / (c.q_heads / c.kv_heads);
        std::vector<double> w;
        std::vector<int32_t> seen;
        for (int32_t j = 0; j < r.prefix + r.extend; ++j) {
          if (j >= r.prefix && ((mask[static_cast<size_t>(t)] >> (j - r.prefix)) & 1) == 0)
            continue;
          const int32_t slot = table[static_cast<size_t>(b * max_seq + j)];
          double dot = 0;
          for (int64_t d = 0; d < c.dim; ++d) {
            dot += static_cast<double>(q[static_cast<size_t>((t * c.q_heads + h) * c.dim + d)]) *
                   kc[(slot * c.kv_heads + kvh) * c.dim + d];
          }
          w.push_back(dot * config.scale);
          seen.push_back(slot);
        }
        const double max = *std::max_element(w.begin(), w.end());
        double sum = 0;
        for (double& x : w) sum += (x = std::exp(x - max));
        for (int64_t d = 0; d < c.dim; ++d) {
          double o = 0;
          for (size_t s = 0; s < seen.size(); ++s) {
            o += w[s] / sum * vc[(seen[s] * c.kv_heads + kvh) * c.dim + d];
          }
          (*want)[static_cast<size_t>((t * c.q_heads + h) * c.dim + d)] = static_cast<float>(o);
        }
      }
    }
  }
  return out;
}

std::vector<int32_t> random_tree(int32_t n, std::mt19937& rng) {
  std::vector<int32_t> parents;
  for (int32_t i = 0; i < n; ++i) parents.push_back(static_cast<int32_t>(rng() % (i + 1)));
  return parents;
}

std::vector<Case> cases() {
  std::mt19937 rng(3);
  const std::vector<int32_t> chain = {0, 1, 2, 3, 4}, star = {0, 0, 0, 0, 0, 0, 0};
  std::vector<Case> out;
  for (const auto& [qh, kvh, dim] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{4, 2, 16}, {4, 4, 64}, {8, 2, 32}}) {
    Case c{qh, kvh, dim, {}};
    c.requests.push_back({0, chain, 6});
    c.requests.push_back({300, star, 8});
    c.requests.push_back({17, {}, 1});  // a plain decode beside the trees
    c.requests.push_back({45, random_tree(11, rng), 12});
    c.requests.push_back({1, random_tree(63, rng), 64});
    out.push_back(c);
  }
  return out;
}

TEST(CpuTreeAttention, MaskedEqualsBruteForce) {
  for (const Case& c : cases()) {
    for (bool own_slots : {false, true}) {
      std::vector<float> want;
      const std::vector<float> got = attend(c, true, own_slots, &want, 11);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 2e-5) << "dim " << c.dim << " at " << i;
      }
    }
  }
}

TEST(CpuTreeAttention, CausalRowsMatchTheUnmaskedPathExactly) {
  Case c{4, 2, 32, {{0, {}, 5}, {120, {}, 9}, {7, {}, 1}}};
  const std::vector<float> plain = attend(c, false, false, nullptr, 5);
  EXPECT_EQ(attend(c, true, false, nullptr, 5), plain);  // causal bits
  EXPECT_EQ(attend(c, false, true, nullptr, 5), plain);  // kv_indices instead of the table
  std::vector<float> want;
  const std::vector<float> got = attend(c, false, false, &want, 5);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-5);
}

}  // namespace
}  // namespace sgl::attention
