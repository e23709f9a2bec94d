// CPU op tests against direct float64 formulas (the references every CUDA op is checked against).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/buffer.h"
#include "core/half.h"
#include "kernels/activation.h"
#include "kernels/argmax.h"
#include "kernels/copy.h"
#include "kernels/embedding.h"
#include "kernels/fill.h"
#include "kernels/gather.h"
#include "kernels/linear.h"
#include "kernels/pooling.h"
#include "kernels/rms_norm.h"
#include "kernels/rope.h"

namespace sgl::kernels {
namespace {

const backend::Stream kCpu = backend::Stream::cpu();

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

Tensor view(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  return Tensor(v.data(), DType::kF32, shape);
}

TEST(CpuKernels, FillUniformIsSeededBoundedAndFlat) {
  const int64_t n = 100000;
  Buffer a(cpu_allocator(), DType::kF32, {n}), b(cpu_allocator(), DType::kF32, {n}),
      c(cpu_allocator(), DType::kF32, {n});
  fill_uniform(a, -0.02f, 0.02f, 5, backend::Stream::cpu());
  fill_uniform(b, -0.02f, 0.02f, 5, backend::Stream::cpu());
  fill_uniform(c, -0.02f, 0.02f, 6, backend::Stream::cpu());
  double sum = 0;
  int64_t same_as_other_seed = 0, low_quarter = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = a.data<float>()[i];
    ASSERT_GE(v, -0.02f);
    ASSERT_LT(v, 0.02f);
    ASSERT_EQ(v, b.data<float>()[i]);
    same_as_other_seed += v == c.data<float>()[i];
    low_quarter += v < -0.01f;
    sum += v;
  }
  EXPECT_NEAR(sum / n, 0.0, 2e-4);
  EXPECT_NEAR(static_cast<double>(low_quarter) / n, 0.25, 0.01);
  EXPECT_LT(same_as_other_seed, 10);
  Buffer h(cpu_allocator(), DType::kBF16, {3});
  fill_constant(h, 1.f, backend::Stream::cpu());
  EXPECT_EQ(bf16_to_float(static_cast<uint16_t*>(h.tensor().raw())[2]), 1.f);
}

TEST(CpuKernels, LinearMatchesReferenceWithBiasAndRowStride) {
  const int64_t m = 7, k = 33, n = 111, ld = 40;  // x rows strided by 40
  auto x = random_vec(m * ld, 1), w = random_vec(n * k, 2), b = random_vec(n, 3);
  std::vector<float> y(m * n, NAN);
  Tensor xs = view(x, {m, ld}).slice_last(0, k);
  linear(xs, view(w, {n, k}), view(b, {n}), view(y, {m, n}), kCpu);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double ref = b[j];
      for (int64_t c = 0; c < k; ++c) ref += double(x[i * ld + c]) * w[j * k + c];
      ASSERT_NEAR(y[i * n + j], ref, 1e-4) << i << "," << j;
    }
  }
}

// --linear-backend: "auto" everywhere; "hopper" is a CUDA kernel, refused on the CPU with a
// clear error; unknown names are invalid arguments.
TEST(CpuKernels, LinearBackendNames) {
  const backend::Stream cpu = backend::Stream::cpu();
  EXPECT_TRUE(set_linear_backend(cpu, "auto").ok());
  const Status hopper = set_linear_backend(cpu, "hopper");
  EXPECT_EQ(hopper.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(hopper.message().find("CUDA"), std::string::npos) << hopper.message();
  EXPECT_EQ(set_linear_backend(cpu, "cublas").code(), StatusCode::kInvalidArgument);
}

TEST(CpuKernels, RmsNormAndFusedAdd) {
  const int64_t t = 5, d = 48;
  auto x = random_vec(t * d, 4), r = random_vec(t * d, 5), w = random_vec(d, 6);
  std::vector<float> out(t * d);
  rms_norm(view(x, {t, d}), view(w, {d}), 1e-6, view(out, {t, d}), kCpu);
  auto x2 = x, r2 = r;
  fused_add_rms_norm(view(x2, {t, d}), view(r2, {t, d}), view(w, {d}), 1e-6, kCpu);
  for (int64_t i = 0; i < t; ++i) {
    double ss = 0, ss2 = 0;
    for (int64_t j = 0; j < d; ++j) {
      ss += double(x[i * d + j]) * x[i * d + j];
      const double s = double(x[i * d + j]) + r[i * d + j];
      ss2 += s * s;
    }
    const double inv = 1 / std::sqrt(ss / d + 1e-6), inv2 = 1 / std::sqrt(ss2 / d + 1e-6);
    for (int64_t j = 0; j < d; ++j) {
      EXPECT_NEAR(out[i * d + j], w[j] * x[i * d + j] * inv, 1e-5);
      const double s = double(x[i * d + j]) + r[i * d + j];
      EXPECT_NEAR(r2[i * d + j], s, 1e-6);
      EXPECT_NEAR(x2[i * d + j], w[j] * s * inv2, 1e-5);
    }
  }
}

TEST(CpuKernels, RmsNormOnStridedHeadsView) {
  // Per-head norm of the q part of a fused qkv row (as Qwen3's q_norm).
  const int64_t t = 3, heads = 4, dim = 8, width = heads * dim + 16;
  auto qkv = random_vec(t * width, 7), w = random_vec(dim, 8);
  auto original = qkv;
  Tensor q = view(qkv, {t, width}).slice_last(0, heads * dim).split_heads(heads);
  rms_norm(q, view(w, {dim}), 1e-6, q, kCpu);
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* src = original.data() + i * width + h * dim;
      double ss = 0;
      for (int64_t j = 0; j < dim; ++j) ss += double(src[j]) * src[j];
      const double inv = 1 / std::sqrt(ss / dim + 1e-6);
      for (int64_t j = 0; j < dim; ++j) {
        EXPECT_NEAR(qkv[i * width + h * dim + j], w[j] * src[j] * inv, 1e-5);
      }
    }
    for (int64_t j = heads * dim; j < width; ++j) {  // k/v part untouched
      EXPECT_EQ(qkv[i * width + j], original[i * width + j]);
    }
  }
}

// qk_rms_norm: q's heads by q's weight, k's by k's, v untouched; and its argument checks.
TEST(CpuKernels, QkRmsNormNormsEachHeadByItsWeight) {
  const int64_t t = 3, hq = 4, hk = 2, dim = 8, width = (hq + 2 * hk) * dim;
  auto qkv = random_vec(t * width, 9), wq = random_vec(dim, 10), wk = random_vec(dim, 11);
  auto want = qkv;
  const Tensor all = view(qkv, {t, width}), ref = view(want, {t, width});
  rms_norm(ref.slice_last(0, hq * dim).split_heads(hq), view(wq, {dim}), 1e-6,
           ref.slice_last(0, hq * dim).split_heads(hq), kCpu);
  rms_norm(ref.slice_last(hq * dim, hk * dim).split_heads(hk), view(wk, {dim}), 1e-6,
           ref.slice_last(hq * dim, hk * dim).split_heads(hk), kCpu);
  ASSERT_NE(want, qkv);
  qk_rms_norm(all.slice_last(0, hq * dim).split_heads(hq),
              all.slice_last(hq * dim, hk * dim).split_heads(hk), view(wq, {dim}), view(wk, {dim}),
              1e-6, kCpu);
  EXPECT_EQ(qkv, want);
  EXPECT_DEATH(qk_rms_norm(all.slice_last(0, hq * dim).split_heads(hq),
                           all.slice_last(hq * dim, hk * dim).split_heads(hk), view(wq, {dim}),
                           view(wk, {dim - 1}), 1e-6, kCpu),
               "qk_rms_norm: weight");
}

TEST(CpuKernels, RopeRotatesHalves) {
  const int64_t t = 3, hq = 2, hk = 1, d = 8, max_pos = 16;
  auto q = random_vec(t * hq * d, 9), k = random_vec(t * hk * d, 10);
  auto q0 = q, k0 = k;
  std::vector<float> table(max_pos * d);
  for (int64_t p = 0; p < max_pos; ++p) {
    for (int64_t i = 0; i < d / 2; ++i) {
      const double angle = p * std::pow(10000.0, -2.0 * i / d);
      table[p * d + i] = std::cos(angle);
      table[p * d + d / 2 + i] = std::sin(angle);
    }
  }
  std::vector<int32_t> pos = {0, 5, 15};
  rope(view(q, {t, hq, d}), view(k, {t, hk, d}), Tensor(pos.data(), DType::kI32, {t}),
       view(table, {max_pos, d}), kCpu);
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t j = 0; j < d / 2; ++j) {
      const double angle = pos[i] * std::pow(10000.0, -2.0 * j / d);
      const float* a = q0.data() + i * hq * d;  // head 0
      EXPECT_NEAR(q[i * hq * d + j], a[j] * std::cos(angle) - a[j + d / 2] * std::sin(angle), 1e-5);
      EXPECT_NEAR(q[i * hq * d + j + d / 2],
                  a[j + d / 2] * std::cos(angle) + a[j] * std::sin(angle), 1e-5);
    }
  }
  EXPECT_NEAR(k[0], k0[0], 1e-7);  // position 0 is the identity
}

TEST(CpuKernels, SiluAndMulEmbeddingGather) {
  auto gu = random_vec(2 * 2 * 5, 11);
  std::vector<float> out(2 * 5);
  silu_and_mul(view(gu, {2, 10}), view(out, {2, 5}), kCpu);
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 5; ++i) {
      const double g = gu[r * 10 + i];
      EXPECT_NEAR(out[r * 5 + i], g / (1 + std::exp(-g)) * gu[r * 10 + 5 + i], 1e-6);
    }
  }
  auto table = random_vec(6 * 3, 12);
  std::vector<int32_t> ids = {5, 0, 5};
  std::vector<float> emb(3 * 3);
  embedding(Tensor(ids.data(), DType::kI32, {3}), view(table, {6, 3}), view(emb, {3, 3}), kCpu);
  EXPECT_EQ(emb[0], table[15]);
  EXPECT_EQ(emb[3], table[0]);
  std::vector<int32_t> indptr = {0, 2, 3};
  std::vector<float> last(2 * 3);
  gather_last_tokens(view(emb, {3, 3}), Tensor(indptr.data(), DType::kI32, {3}), view(last, {2, 3}),
                     kCpu);
  EXPECT_EQ(last[0], emb[3]);
  EXPECT_EQ(last[3], emb[6]);
  // The last two rows written back to rows 2 and 0 of a [4, 3] table; rows 1 and 3 untouched.
  std::vector<int32_t> rows = {2, 0};
  std::vector<float> dst(4 * 3, -1.f);
  scatter_rows(view(last, {2, 3}), Tensor(rows.data(), DType::kI32, {2}), view(dst, {4, 3}), kCpu);
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(dst[2 * 3 + j], last[j]);
    EXPECT_EQ(dst[0 * 3 + j], last[3 + j]);
    EXPECT_EQ(dst[1 * 3 + j], -1.f);
    EXPECT_EQ(dst[3 * 3 + j], -1.f);
  }
}

TEST(CpuKernels, PoolRowsTakesEachRequestsLastRowOrSum) {
  // Three requests owning 2, 1 and 3 rows of a [6, 4] input.
  auto src = random_vec(6 * 4, 14);
  std::vector<int32_t> indptr = {0, 2, 3, 6};
  const Tensor ptr(indptr.data(), DType::kI32, {4});
  std::vector<float> last(3 * 4, -1.f), sum(3 * 4, -1.f);
  pool_rows(view(src, {6, 4}), ptr, RowPool::kLast, view(last, {3, 4}), kCpu);
  pool_rows(view(src, {6, 4}), ptr, RowPool::kSum, view(sum, {3, 4}), kCpu);
  for (int b = 0; b < 3; ++b) {
    for (int c = 0; c < 4; ++c) {
      EXPECT_EQ(last[b * 4 + c], src[(indptr[b + 1] - 1) * 4 + c]);
      double expected = 0;
      for (int r = indptr[b]; r < indptr[b + 1]; ++r) expected += src[r * 4 + c];
      EXPECT_NEAR(sum[b * 4 + c], expected, 1e-6);
    }
  }
  // A request that owns no row is a bug upstream, not a zero vector.
  std::vector<int32_t> empty = {0, 0};
  EXPECT_DEATH(pool_rows(view(src, {6, 4}), Tensor(empty.data(), DType::kI32, {2}), RowPool::kSum,
                         view(sum, {1, 4}), kCpu),
               "owns rows \\[0, 0\\)");
}

TEST(CpuKernels, ArgmaxRowsTakesTheFirstMaximumAndSkipsNaN) {
  const float inf = INFINITY, nan = NAN;
  // Rows: a plain maximum; a tie (the first wins); NaN before and after the maximum; all -inf
  // (the first); all NaN (0); a row strided past its end (the padding holds a larger value).
  std::vector<float> data = {1,    5,    2,    9, 3, 7,   7,   1,   9, 9, nan, 2, 3, 9,   nan,
                             -inf, -inf, -inf, 9, 9, nan, nan, nan, 9, 9, 0,   4, 1, 100, 100};
  const Tensor all(data.data(), DType::kF32, {6, 5});
  std::vector<int32_t> ids(6, -1);
  argmax_rows(all.slice_last(0, 3), Tensor(ids.data(), DType::kI32, {6}), backend::Stream::cpu());
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 0, 2, 0, 0, 1}));
  // Through an id map (EAGLE-3's draft-to-target ids): the index's entry, 0's for no maximum.
  std::vector<int32_t> id_map = {70, 71, 72};
  argmax_rows(all.slice_last(0, 3), Tensor(ids.data(), DType::kI32, {6}), backend::Stream::cpu(),
              Tensor(id_map.data(), DType::kI32, {3}));
  EXPECT_EQ(ids, (std::vector<int32_t>{71, 70, 72, 70, 70, 71}));
  std::vector<int32_t> short_map = {1, 2};
  EXPECT_DEATH(argmax_rows(all.slice_last(0, 3), Tensor(ids.data(), DType::kI32, {6}),
                           backend::Stream::cpu(), Tensor(short_map.data(), DType::kI32, {2})),
               "id_map must be i32 with 3 values");
}

TEST(CpuKernels, EmbeddingRejectsOutOfRangeIds) {
  auto table = random_vec(4 * 2, 13);
  std::vector<int32_t> ids = {4};
  std::vector<float> out(2);
  EXPECT_DEATH(
      embedding(Tensor(ids.data(), DType::kI32, {1}), view(table, {4, 2}), view(out, {1, 2}), kCpu),
      "token id 4");
}

// A tensor-parallel rank's part of the lookup: its rows, zeros for the other ranks' ids, so the
// ranks' parts add up to the whole lookup.
TEST(CpuKernels, EmbeddingShardsAddUpToTheLookup) {
  auto table = random_vec(6 * 3, 14);  // vocabulary 6, hidden 3
  std::vector<int32_t> ids = {5, 0, 3, 2};
  std::vector<float> whole(4 * 3), sum(4 * 3, 0.f), part(4 * 3);
  const Tensor id_tensor(ids.data(), DType::kI32, {4});
  embedding(id_tensor, view(table, {6, 3}), view(whole, {4, 3}), kCpu);
  for (int rank = 0; rank < 2; ++rank) {
    // Rank r holds vocabulary rows [3r, 3r + 3).
    const Tensor rows(table.data() + rank * 9, DType::kF32, {3, 3});
    embedding_shard(id_tensor, rows, rank * 3, 6, view(part, {4, 3}), kCpu);
    for (size_t i = 0; i < part.size(); ++i) {
      const bool mine = ids[i / 3] / 3 == rank;
      if (!mine) EXPECT_EQ(part[i], 0.f) << i;
      sum[i] += part[i];
    }
  }
  EXPECT_EQ(sum, whole);
  std::vector<int32_t> bad = {6};
  EXPECT_DEATH(embedding_shard(Tensor(bad.data(), DType::kI32, {1}), view(table, {3, 3}), 0, 6,
                               view(part, {1, 3}), kCpu),
               "token id 6");
}

TEST(Half, Bf16AndF16RoundTrip) {
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(float_to_bf16(1.00390625f), 0x3f80);  // tie rounds to even
  for (float v : {0.f, -2.5f, 65504.f, 6.1035156e-05f, 5.9604645e-08f, -0.333251953125f}) {
    EXPECT_EQ(f16_to_float(float_to_f16(v)), v) << v;
  }
  EXPECT_TRUE(std::isinf(f16_to_float(float_to_f16(1e6f))));
  EXPECT_EQ(float_to_f16(2.9802322e-08f), 0);  // half of the smallest subnormal: ties to 0
}

TEST(Copy, ConvertsOnHost) {
  std::vector<float> src = {1.5f, -2.f, 3.25f};
  std::vector<uint16_t> bf(3);
  std::vector<float> back(3);
  copy(view(src, {3}), Tensor(bf.data(), DType::kBF16, {3}), kCpu);
  copy(Tensor(bf.data(), DType::kBF16, {3}), view(back, {3}), kCpu);
  EXPECT_EQ(back, src);
}

}  // namespace
}  // namespace sgl::kernels
