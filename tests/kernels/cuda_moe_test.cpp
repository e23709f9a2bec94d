// CUDA MoE routing, alignment and shared-expert gate against the CPU ops, and fused_moe (route +
// align + experts) captured once in a CUDA graph and replayed with new router logits. Label:
// cuda.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/cuda_graph.h"
#include "cuda_moe_fixture.h"
#include "kernels/cuda/moe_kernels.h"
#include "kernels/cuda/moe_plan.h"

namespace sgl::kernels {
namespace {

using test::MoeProblem;
using test::Routing;

using CudaMoe = test::CudaMoeTest;

std::string route_case(int64_t tokens, int64_t experts, int64_t k, MoeScoring scoring,
                       bool renormalize) {
  std::ostringstream s;
  s << "T=" << tokens << " E=" << experts << " k=" << k
    << (scoring == MoeScoring::kSoftmax ? " softmax" : " sigmoid")
    << (renormalize ? " renormalized" : "");
  return s.str();
}

// Logits on a grid of 1/8 in [-3, 3]: many exact ties (the lower expert must win on both
// sides), while distinct scores differ far more than the few ulps between the GPU's expf and
// the CPU's, so the ids must match exactly and the weights to 1e-6. Rows 1 and 2 hold a NaN
// logit (softmax: every score NaN; sigmoid: one NaN score), where the CPU's rules pick too.
TEST_F(CudaMoe, RouteMatchesCpuExactly) {
  for (int64_t experts : {1, 8, 16, 33, 60, 128, 256, 512}) {
    for (int64_t k : {1, 2, 4, 8, 32}) {  // 32: every lane of the warp keeps a pick
      if (k > experts) continue;
      for (int64_t tokens : {1, 7, 300}) {
        const int64_t ld = experts + 3;  // a row-strided view
        std::vector<float> logits(tokens * ld, NAN);
        const std::vector<float> noise =
            test::random_values(tokens * ld, static_cast<uint64_t>(experts * 100 + k), 1.f, false);
        for (int64_t t = 0; t < tokens; ++t) {
          for (int64_t e = 0; e < experts; ++e) {
            logits[t * ld + e] = std::clamp(std::round(noise[t * ld + e] * 12) / 8, -3.f, 3.f);
          }
        }
        if (tokens > 2) {
          logits[1 * ld + experts / 2] = NAN;
          logits[2 * ld + 0] = NAN;
        }
        Buffer dlogits = upload(logits, {tokens, ld}, DType::kF32);
        for (const MoeScoring scoring : {MoeScoring::kSoftmax, MoeScoring::kSigmoid}) {
          for (const bool renormalize : {false, true}) {
            const std::string what = route_case(tokens, experts, k, scoring, renormalize);
            std::vector<float> want_w(tokens * k);
            std::vector<int32_t> want_ids(tokens * k);
            moe_route(Tensor(logits.data(), DType::kF32, {tokens, ld}).slice_last(0, experts),
                      scoring, renormalize, Tensor(want_w.data(), DType::kF32, {tokens, k}),
                      Tensor(want_ids.data(), DType::kI32, {tokens, k}), backend::Stream::cpu());
            Buffer w = filled({tokens, k}, DType::kF32, -1.f);
            Buffer ids = filled_i32({tokens, k}, -7);
            moe_route(dlogits.tensor().slice_last(0, experts), scoring, renormalize, w, ids,
                      stream());
            const std::vector<float> got_w = download(w);
            const std::vector<int32_t> got_ids = download_i32(ids);
            for (int64_t n = 0; n < tokens * k; ++n) {
              ASSERT_EQ(got_ids[n], want_ids[n])
                  << what << ": id of token " << n / k << " slot " << n % k;
              const bool both_nan = std::isnan(got_w[n]) && std::isnan(want_w[n]);
              ASSERT_TRUE(both_nan || std::abs(got_w[n] - want_w[n]) <= 1e-6)
                  << what << ": weight of token " << n / k << " slot " << n % k << " is "
                  << got_w[n] << ", CPU " << want_w[n];
            }
          }
        }
      }
    }
  }
}

struct AlignCase {
  int64_t tokens, k, experts, block;
  bool one_expert;      // every entry on expert experts / 2
  bool masked = false;  // every fifth entry -1 (a masked pair, in no group)
};

// The GPU's alignment against the CPU's: num_tokens_post_padded, expert_offsets and expert_ids
// equal, and each expert's group the same entries (the order inside a group is unspecified).
// Outputs are larger than needed and pre-filled with junk, so the tails must be written too.
TEST_F(CudaMoe, AlignMatchesCpuGroups) {
  const AlignCase cases[] = {
      {1, 8, 128, 1, false},           {1, 8, 128, 64, false},     {7, 4, 60, 16, false},
      {300, 8, 60, 64, false},         {300, 2, 8, 1, false},      {33, 1, 5, 1, false},
      {8192, 8, 128, 64, false},       {8192, 8, 512, 16, false},  {2048, 8, 8192, 64, false},
      {300, 8, 16, 64, true},          {4096, 8, 64, 1, true},     {0, 2, 4, 8, false},
      {5000, 3, 100, 32, false},       {8192, 8, 2048, 64, false}, {300, 8, 16, 64, false, true},
      {8192, 8, 128, 64, false, true},
  };
  for (const AlignCase& c : cases) {
    std::ostringstream what;
    what << "T=" << c.tokens << " k=" << c.k << " E=" << c.experts << " block=" << c.block
         << (c.one_expert ? " one expert" : "") << (c.masked ? " masked" : "");
    const int64_t entries = c.tokens * c.k;
    std::vector<int32_t> ids(entries);
    const std::vector<float> u = test::random_values(entries, c.tokens + c.experts, 1.f, false);
    for (int64_t n = 0; n < entries; ++n) {
      const double unit = std::clamp(u[n] / 3.4641016 + 0.5, 0.0, 0.999999);  // [0, 1)
      ids[n] = c.one_expert ? static_cast<int32_t>(c.experts / 2)
                            : static_cast<int32_t>(unit * c.experts);
      if (c.masked && n % 5 == 0) ids[n] = -1;
    }
    const MoeAlignSizes sizes = moe_align_sizes(c.tokens, c.k, c.experts, c.block);
    const int64_t n_sorted = sizes.max_padded + 5, n_blocks = sizes.max_blocks + 3;
    std::vector<int32_t> sorted(n_sorted, 12345), blocks(n_blocks, 12345);
    std::vector<int32_t> offsets(c.experts + 1, 12345), total(1, 12345);
    moe_align_block_size(Tensor(ids.data(), DType::kI32, {c.tokens, c.k}), c.experts, c.block,
                         MoeAlignment{Tensor(sorted.data(), DType::kI32, {n_sorted}),
                                      Tensor(blocks.data(), DType::kI32, {n_blocks}),
                                      Tensor(offsets.data(), DType::kI32, {c.experts + 1}),
                                      Tensor(total.data(), DType::kI32, {1})},
                         backend::Stream::cpu());

    Buffer dids =
        upload_i32(ids.empty() ? std::vector<int32_t>{0} : ids, {std::max<int64_t>(entries, 1)});
    const Tensor topk(dids.tensor().raw(), DType::kI32, {c.tokens, c.k}, dids.tensor().device());
    // The op (one CTA) and, where the sizes spread it, the several-CTA alignment fused_moe runs.
    const int64_t ctas = cuda::moe_align_ctas(entries, c.experts);
    for (const bool spread : {false, true}) {
      if (spread && ctas == 1) continue;
      const std::string kernel =
          what.str() + (spread ? " (" + std::to_string(ctas) + " CTAs)" : "");
      Buffer dsorted = filled_i32({n_sorted}, 12345), dblocks = filled_i32({n_blocks}, 12345);
      Buffer doffsets = filled_i32({c.experts + 1}, 12345), dtotal = filled_i32({1}, 12345);
      if (spread) {
        Buffer scratch = filled_i32({ctas * c.experts}, 12345);
        const cuda::MoeAlignOut out{.sorted = dsorted.data<int32_t>(),
                                    .sorted_size = n_sorted,
                                    .expert_ids = dblocks.data<int32_t>(),
                                    .expert_ids_size = n_blocks,
                                    .offsets = doffsets.data<int32_t>(),
                                    .counters = dtotal.data<int32_t>(),
                                    .cta_counts = scratch.data<int32_t>()};
        cuda::launch_moe_align(dids.data<int32_t>(), entries, c.experts, c.block, out, stream());
        backend::synchronize(stream());  // scratch is freed at the end of this block
      } else {
        moe_align_block_size(topk, c.experts, c.block,
                             MoeAlignment{dsorted, dblocks, doffsets, dtotal}, stream());
      }
      const std::vector<int32_t> got_sorted = download_i32(dsorted);
      ASSERT_EQ(download_i32(dtotal), total) << kernel << ": num_tokens_post_padded";
      ASSERT_EQ(download_i32(doffsets), offsets) << kernel << ": expert_offsets";
      const std::vector<int32_t> got_blocks = download_i32(dblocks);
      for (int64_t b = 0; b < n_blocks; ++b) {
        ASSERT_EQ(got_blocks[b], blocks[b]) << kernel << ": expert_ids[" << b << "]";
      }
      for (int64_t e = 0; e < c.experts; ++e) {
        std::vector<int32_t> want(sorted.begin() + offsets[e], sorted.begin() + offsets[e + 1]);
        std::vector<int32_t> got(got_sorted.begin() + offsets[e],
                                 got_sorted.begin() + offsets[e + 1]);
        std::sort(got.begin(), got.end());  // the CPU writes ascending, padding (T*k) last
        ASSERT_EQ(got, want) << kernel << ": group of expert " << e;
      }
      for (int64_t p = total[0]; p < n_sorted; ++p) {
        ASSERT_EQ(got_sorted[p], entries) << kernel << ": sorted_token_ids[" << p << "]";
      }
    }
  }
}

// Captured once (routing, alignment and experts) at a fixed T, replayed with new router logits:
// every replay equals an eager run bit for bit (the same kernels on the same data) and the
// CPU reference within the bound. T=4, k=8: the decode path; T=100, k=4: the aligned GEMV;
// T=300, k=8: the grouped GEMM.
TEST_F(CudaMoe, FusedMoeReplaysInCudaGraph) {
  for (const auto [tokens, k] : {std::pair<int64_t, int64_t>{4, 8}, {100, 4}, {300, 8}}) {
    const int64_t hidden = 72, inter = 40, experts = 16;
    MoeProblem p(tokens, hidden, inter, experts, k, DType::kBF16, Routing::kRandom, 40 + tokens);
    Buffer x = upload(p.x, {tokens, hidden}, DType::kBF16);
    Buffer w13 = upload(*p.w13, {experts, 2 * inter, hidden}, DType::kBF16);
    Buffer w2 = upload(*p.w2, {experts, hidden, inter}, DType::kBF16);
    Buffer logits = filled({tokens, experts}, DType::kF32, 0.f);
    Buffer weights = filled({tokens, k}, DType::kF32, NAN), ids = filled_i32({tokens, k}, -1);
    Buffer eager_weights = filled({tokens, k}, DType::kF32, NAN);
    Buffer eager_ids = filled_i32({tokens, k}, -1);
    const int64_t bytes =
        fused_moe_workspace_bytes(x.tensor().device(), tokens, k, experts, hidden, inter);
    Buffer workspace = filled_i32({(bytes + 3) / 4}, -1);
    Buffer out = filled({tokens, hidden}, DType::kBF16, NAN);
    Buffer eager_out = filled({tokens, hidden}, DType::kBF16, NAN);
    auto layer = [&](const Tensor& w, const Tensor& id, const Tensor& o) {
      moe_route(logits, MoeScoring::kSoftmax, true, w, id, stream());
      fused_moe(x, w13, w2, w, id, workspace, o, stream());
    };
    const backend::CudaGraph graph =
        backend::CudaGraph::capture(stream(), [&] { layer(weights, ids, out); });

    std::vector<int32_t> first_ids;
    for (uint64_t replay = 0; replay < 3; ++replay) {
      const std::string what = "T=" + std::to_string(tokens) + " replay " + std::to_string(replay);
      const std::vector<float> new_logits =
          test::random_values(tokens * experts, 1000 + replay, 1.f, false);
      copy(Tensor(const_cast<float*>(new_logits.data()), DType::kF32, {tokens, experts}), logits,
           stream());
      graph.replay(stream());
      const std::vector<float> got = download(out);
      layer(eager_weights, eager_ids, eager_out);
      const std::vector<float> eager = download(eager_out);
      for (size_t n = 0; n < got.size(); ++n) {
        ASSERT_EQ(std::memcmp(&got[n], &eager[n], sizeof(float)), 0)
            << what << ": out[" << n / hidden << ", " << n % hidden << "] replayed " << got[n]
            << ", eager " << eager[n];
      }
      p.ids = download_i32(ids);
      p.weights = download(weights);
      ASSERT_EQ(p.ids, download_i32(eager_ids)) << what;
      EXPECT_TRUE(test::matches_reference(p, got)) << what;
      if (replay == 0) first_ids = p.ids;
    }
    EXPECT_NE(p.ids, first_ids) << "the replays did not see the new logits";
  }
}

// out += sigmoid(x . w_gate) * y against the CPU op; bf16 within the rounding of out (2^-8 of
// |out| + |y| covers the final rounding and the gate's f32 sum).
TEST_F(CudaMoe, AddSigmoidGatedMatchesCpu) {
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    const bool bf16 = dtype == DType::kBF16;
    for (int64_t tokens : {1, 7, 257}) {
      for (int64_t hidden : {72, 111, 2048}) {
        const int64_t ld = hidden + 5;  // x row-strided
        std::vector<float> x = test::random_values(tokens * ld, hidden + 1, 1.f, bf16);
        std::vector<float> w = test::random_values(hidden, hidden + 2, 0.05f, bf16);
        std::vector<float> y = test::random_values(tokens * hidden, hidden + 3, 1.f, bf16);
        std::vector<float> out = test::random_values(tokens * hidden, hidden + 4, 1.f, bf16);
        Buffer dx = upload(x, {tokens, ld}, dtype), dw = upload(w, {1, hidden}, dtype);
        Buffer dy = upload(y, {tokens, hidden}, dtype), dout = upload(out, {tokens, hidden}, dtype);
        const std::vector<float> before = out;
        add_sigmoid_gated(Tensor(x.data(), DType::kF32, {tokens, ld}).slice_last(0, hidden),
                          Tensor(w.data(), DType::kF32, {1, hidden}),
                          Tensor(y.data(), DType::kF32, {tokens, hidden}),
                          Tensor(out.data(), DType::kF32, {tokens, hidden}),
                          backend::Stream::cpu());
        add_sigmoid_gated(dx.tensor().slice_last(0, hidden), dw, dy, dout, stream());
        const std::vector<float> got = download(dout);
        for (int64_t n = 0; n < tokens * hidden; ++n) {
          const double scale = std::abs(before[n]) + std::abs(y[n]);
          const double tol = bf16 ? 0x1p-8 * scale : 1e-5 * scale + 1e-6;
          ASSERT_LE(std::abs(got[n] - out[n]), tol)
              << dtype_name(dtype) << " T=" << tokens << " H=" << hidden << ": out[" << n / hidden
              << ", " << n % hidden << "] = " << got[n] << ", CPU " << out[n];
        }
      }
    }
  }
}

}  // namespace
}  // namespace sgl::kernels
