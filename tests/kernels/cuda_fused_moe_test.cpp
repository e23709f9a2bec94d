// CUDA fused_moe against the CPU reference (fused_moe_reference) on every path: the decode
// expert GEMV (bf16, up to 64 (token, slot) pairs, 16 on a Hopper GPU; no alignment), the GEMV
// over the alignment (bf16, up to 1024 pairs; without the Hopper GEMM, so on a Hopper GPU through
// allow_hopper false), for more pairs the Hopper GEMM's grouped mode
// (on sm_90) and the portable grouped tensor-core GEMM (both run on a Hopper GPU),
// the plain kernels (f32, and bf16 rows 16-byte loads cannot take), over expert counts, top-k,
// token counts from 1 to 16384 (several chunks), sizes not multiples of 64, the Qwen3-30B-A3B and
// Mixtral shapes, strided x and skewed routing. Bounds: cuda_moe_fixture.h. Label: cuda.
#include <gtest/gtest.h>

#include "cuda_moe_fixture.h"
#include "kernels/cuda/cuda_moe.h"
#include "kernels/cuda/hopper_grouped_gemm.h"
#include "kernels/cuda/moe_plan.h"

namespace sgl::kernels {
namespace {

using test::MoeProblem;
using test::Routing;

class CudaFusedMoe : public test::CudaMoeTest {
 protected:
  struct Weights {
    Buffer w13, w2;
  };
  Weights upload_weights(const MoeProblem& p) {
    return {upload(*p.w13, {p.experts, 2 * p.inter, p.hidden}, p.dtype),
            upload(*p.w2, {p.experts, p.hidden, p.inter}, p.dtype)};
  }
  // fused_moe on the GPU: NaN-poisoned output, a workspace poisoned with 0xff bytes.
  // allow_hopper false: the paths of a GPU without the Hopper GEMM (decode GEMV to 64 pairs, the
  // aligned GEMV to 1024, then the portable grouped GEMM).
  std::vector<float> run(const MoeProblem& p, const Weights& w, bool allow_hopper = true) {
    Buffer x = upload(p.x, {p.tokens, p.x_stride}, p.dtype);
    const Tensor xv = x.tensor().slice_last(0, p.hidden);
    Buffer weights = upload(p.weights, {p.tokens, p.top_k}, DType::kF32);
    Buffer ids = upload_i32(p.ids, {p.tokens, p.top_k});
    const int64_t bytes =
        fused_moe_workspace_bytes(xv.device(), p.tokens, p.top_k, p.experts, p.hidden, p.inter);
    Buffer workspace = filled_i32({std::max<int64_t>(1, (bytes + 3) / 4)}, -1);
    Buffer out = filled({p.tokens, p.hidden}, p.dtype, NAN);
    const bool masked = std::count(p.ids.begin(), p.ids.end(), -1) > 0;
    cuda::fused_moe(xv, w.w13, w.w2, weights, ids, workspace, out, stream(), allow_hopper, masked);
    return download(out);
  }
  // fused_moe with out = x (contiguous x): the model's in-place call.
  std::vector<float> run_in_place(const MoeProblem& p, const Weights& w) {
    Buffer x = upload(p.x, {p.tokens, p.x_stride}, p.dtype);
    EXPECT_EQ(p.x_stride, p.hidden);
    Buffer weights = upload(p.weights, {p.tokens, p.top_k}, DType::kF32);
    Buffer ids = upload_i32(p.ids, {p.tokens, p.top_k});
    const int64_t bytes =
        fused_moe_workspace_bytes(Device::cuda(), p.tokens, p.top_k, p.experts, p.hidden, p.inter);
    Buffer workspace = filled_i32({std::max<int64_t>(1, (bytes + 3) / 4)}, -1);
    fused_moe(x, w.w13, w.w2, weights, ids, workspace, x, stream());
    return download(x);
  }
  // Every path the problem can take: batches beyond the GEMVs' run with and without the Hopper
  // GEMM.
  void check(const MoeProblem& p) {
    const Weights w = upload_weights(p);
    EXPECT_TRUE(test::matches_reference(p, run(p, w)));
    if (p.tokens * p.top_k > cuda::kMoeHopperDecodeMaxPairs) {
      EXPECT_TRUE(test::matches_reference(p, run(p, w, /*allow_hopper=*/false))) << "portable";
    }
  }
};

uint64_t seed_of(int64_t a, int64_t b, int64_t c, int64_t d) {
  return static_cast<uint64_t>(((a * 31 + b) * 131 + c) * 1009 + d);
}

// bf16 over E, k, T: T*k <= 64 (16 with the Hopper GEMM) takes the decode GEMV; without the
// Hopper GEMM up to 1024 the aligned GEMV (many tokens per expert: several 16-token passes), more
// the grouped GEMMs; H=72 I=40 and H=200 I=96 leave partial row tiles, k slices and column tiles
// everywhere.
TEST_F(CudaFusedMoe, Bf16MatchesReferenceOverSweep) {
  for (const auto [hidden, inter] : {std::pair<int64_t, int64_t>{72, 40}, {200, 96}}) {
    for (int64_t experts : {8, 16, 60, 128}) {
      for (int64_t k : {1, 2, 4, 8}) {
        for (int64_t tokens : {1, 2, 7, 16, 64, 300}) {
          check(MoeProblem(tokens, hidden, inter, experts, k, DType::kBF16, Routing::kRandom,
                           seed_of(hidden, experts, k, tokens)));
        }
      }
    }
  }
}

// f32 runs the plain kernels (the f32 golden tests' path).
TEST_F(CudaFusedMoe, F32MatchesReferenceOverSweep) {
  for (int64_t experts : {8, 60, 128}) {
    for (int64_t k : {1, 2, 8}) {
      for (int64_t tokens : {1, 7, 64, 300}) {
        check(MoeProblem(tokens, 72, 40, experts, k, DType::kF32, Routing::kRandom,
                         seed_of(1, experts, k, tokens)));
      }
    }
  }
  check(MoeProblem(5, 36, 20, 16, 4, DType::kF32, Routing::kRandom, 3));
}

// Long prefills: several chunks (moe_chunk_tokens), thousands of rows per expert.
TEST_F(CudaFusedMoe, LongPrefillsRunInChunks) {
  ASSERT_LT(cuda::moe_chunk_tokens({16384, 8, 128, 72, 40}), 16384) << "no chunking exercised";
  for (int64_t experts : {8, 128}) {
    for (int64_t k : {2, 8}) {
      for (int64_t tokens : {2048, 16384}) {
        check(MoeProblem(tokens, 72, 40, experts, k, DType::kBF16, Routing::kRandom,
                         seed_of(2, experts, k, tokens)));
      }
    }
  }
  check(MoeProblem(2048, 72, 40, 16, 4, DType::kF32, Routing::kRandom, 5));
}

// bf16 rows that 16-byte loads cannot take (H, I or x's stride not a multiple of 8) run the
// plain kernels; a stride that is a multiple of 8 keeps the tensor-core paths.
TEST_F(CudaFusedMoe, Bf16UnalignedShapesAndStridedInput) {
  for (int64_t tokens : {1, 7, 300}) {
    check(
        MoeProblem(tokens, 36, 20, 8, 2, DType::kBF16, Routing::kRandom, seed_of(3, 0, 0, tokens)));
    check(
        MoeProblem(tokens, 72, 44, 8, 2, DType::kBF16, Routing::kRandom, seed_of(4, 0, 0, tokens)));
    check(MoeProblem(tokens, 72, 40, 8, 2, DType::kBF16, Routing::kRandom, seed_of(5, 0, 0, tokens),
                     /*stride=*/76));
    check(MoeProblem(tokens, 72, 40, 8, 2, DType::kBF16, Routing::kRandom, seed_of(6, 0, 0, tokens),
                     /*stride=*/88));
  }
}

// Skewed routing: every token on the same k experts (the rest empty), and every slot of every
// token on one expert (one group of T*k rows: several passes of the GEMVs over 16-token
// chunks, many blocks of one expert in the grouped GEMM).
TEST_F(CudaFusedMoe, SkewedRouting) {
  for (const Routing routing : {Routing::kFirstExperts, Routing::kOneExpert}) {
    for (const DType dtype : {DType::kBF16, DType::kF32}) {
      for (int64_t tokens : {1, 8, 32, 300}) {
        check(MoeProblem(tokens, 72, 40, 16, 2, dtype, routing, seed_of(7, 0, 0, tokens)));
        check(MoeProblem(tokens, 200, 96, 60, 8, dtype, routing, seed_of(8, 0, 0, tokens)));
      }
    }
  }
  // k == E: every expert chosen by every token.
  check(MoeProblem(7, 72, 40, 8, 8, DType::kBF16, Routing::kRandom, 9));
  check(MoeProblem(64, 72, 40, 8, 8, DType::kBF16, Routing::kRandom, 10));
}

// out = x on every path (decode and aligned GEMVs, grouped GEMM, plain kernels; several chunks)
// gives what a separate out gives, bit for bit.
TEST_F(CudaFusedMoe, InPlaceEqualsSeparateOutput) {
  for (const DType dtype : {DType::kBF16, DType::kF32}) {
    for (int64_t tokens : {1, 8, 100, 300, 8192}) {
      const MoeProblem p(tokens, 72, 40, 16, 4, dtype, Routing::kRandom, seed_of(9, 0, 0, tokens));
      const Weights w = upload_weights(p);
      const std::vector<float> apart = run(p, w);
      EXPECT_TRUE(test::matches_reference(p, apart));
      EXPECT_EQ(run_in_place(p, w), apart) << tokens << " tokens";
    }
  }
}

// Expert parallelism masks the pairs routed to other ranks' experts (id -1): with masked_pairs
// (every path: the decode GEMVs' masked instances, the aligned GEMV, grouped and Hopper GEMMs)
// they add nothing, a token whose pairs are all masked gets zeros, and so does a batch with no
// pair left (share 1.0: the down GEMV's zero tiles).
TEST_F(CudaFusedMoe, MaskedPairsAddNothing) {
  for (const DType dtype : {DType::kBF16, DType::kF32}) {
    for (int64_t tokens : {1, 2, 7, 16, 64, 300}) {
      for (const double share : {0.5, 1.0}) {
        const MoeProblem p(tokens, 72, 40, 16, 4, dtype, Routing::kRandom,
                           seed_of(13, tokens, static_cast<int64_t>(share * 10), 0));
        check(p.masked(share, seed_of(14, tokens, 0, 0)));
      }
    }
  }
  const MoeProblem all(160, 2048, 768, 128, 8, DType::kBF16, Routing::kRandom, 15);
  const MoeProblem half = all.masked(0.5, 16);
  const Weights w = upload_weights(half);
  for (int64_t tokens : {1, 8, 160}) {
    const MoeProblem p = half.head(tokens);
    EXPECT_TRUE(test::matches_reference(p, run(p, w)));
    EXPECT_TRUE(test::matches_reference(p, run(p, w, /*allow_hopper=*/false)));
  }
}

// moe_local_ids on the GPU: the rank's experts renumbered from 0, the others -1, as on the CPU.
TEST_F(CudaFusedMoe, LocalIdsMaskOtherRanksExperts) {
  const MoeProblem p(300, 8, 8, 128, 8, DType::kF32, Routing::kRandom, 17);
  for (const auto [first, count] : {std::pair<int64_t, int64_t>{0, 64}, {64, 64}, {96, 32}}) {
    std::vector<int32_t> want(p.ids.size());
    moe_local_ids(Tensor(const_cast<int32_t*>(p.ids.data()), DType::kI32, {p.tokens, p.top_k}),
                  first, count, Tensor(want.data(), DType::kI32, {p.tokens, p.top_k}),
                  backend::Stream::cpu());
    Buffer ids = upload_i32(p.ids, {p.tokens, p.top_k});
    Buffer local = filled_i32({p.tokens, p.top_k}, 12345);
    moe_local_ids(ids, first, count, local, stream());
    EXPECT_EQ(download_i32(local), want) << "experts " << first << " + " << count;
  }
}

// On Hopper, 256-token tiles over k past 1024 (H and I above 1024; about 128 pairs an expert,
// so each tile is half padding) run one CTA a tile: its fused SiLU stopping at each tile's last
// real row, and its down projection scattered to the (token, slot) rows. The other shapes here
// leave those tiles to the persistent kernel (hopper_grouped_runs_persistent).
TEST_F(CudaFusedMoe, LongKTilesRunOneCtaATile) {
  const MoeProblem p(1024, 1096, 1032, 8, 1, DType::kBF16, Routing::kRandom, 13);
  ASSERT_FALSE(cuda::hopper_grouped_runs_persistent(256, (p.hidden + 63) / 64));
  ASSERT_FALSE(cuda::hopper_grouped_runs_persistent(256, (p.inter + 63) / 64));
  check(p);
}

// Qwen3-30B-A3B's layer: decode (1-8 tokens: the speed-critical path), small prefills and a
// batch beyond the GEMVs (the Hopper GEMM's grouped mode).
TEST_F(CudaFusedMoe, Qwen3MoeShape) {
  const MoeProblem all(160, 2048, 768, 128, 8, DType::kBF16, Routing::kRandom, 11);
  const Weights w = upload_weights(all);
  for (int64_t tokens : {1, 2, 7, 8, 16, 64, 160}) {
    const MoeProblem p = all.head(tokens);
    EXPECT_TRUE(test::matches_reference(p, run(p, w)));
  }
  EXPECT_TRUE(test::matches_reference(all, run(all, w, /*allow_hopper=*/false)));
}

// Mixtral-8x7B's layer (2.8 GB of bf16 weights), at a few tokens.
TEST_F(CudaFusedMoe, MixtralShape) {
  const MoeProblem all(3, 4096, 14336, 8, 2, DType::kBF16, Routing::kRandom, 12);
  const Weights w = upload_weights(all);
  for (int64_t tokens : {1, 3}) {
    const MoeProblem p = all.head(tokens);
    EXPECT_TRUE(test::matches_reference(p, run(p, w)));
  }
}

}  // namespace
}  // namespace sgl::kernels
