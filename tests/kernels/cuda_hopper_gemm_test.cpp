// Our Hopper GEMM (kernels/cuda/hopper_gemm.h) against the CPU linear: token counts across
// every token tile and past one tile, output widths from one tile to many, k from one k-block
// to splits across a cluster, strided x, bias, bf16 and f32 outputs, and the fused gate/up +
// SiLU; plus what it declines. Skips where the GPU is not compute capability 9.0. Label: cuda.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/half.h"
#include "cuda_linear_fixture.h"
#include "kernels/cuda/hopper_gemm.h"
#include "kernels/cuda/hopper_grouped_gemm.h"
#include "kernels/cuda/stream_gemms.h"
#include "kernels/linear.h"

namespace sgl::kernels {
namespace {

class CudaHopperGemm : public test::CudaLinearTest {
 protected:
  void SetUp() override {
    if (!hopper().available()) GTEST_SKIP() << "needs a compute capability 9.0 GPU";
  }
  cuda::HopperGemm& hopper() { return cuda::StreamGemms::of(stream_.get()).hopper; }
  // A device copy of host i32 values (grouped problems' tile experts, rows in use, row entries).
  Buffer upload_i32(const std::vector<int32_t>& v) {
    const int64_t n = static_cast<int64_t>(v.size());
    Buffer dev(gpu_, DType::kI32, {n});
    copy(Tensor(const_cast<int32_t*>(v.data()), DType::kI32, {n}), dev, stream_.get());
    return dev;
  }
};

TEST_F(CudaHopperGemm, MatchesCpuLinearOverShapes) {
  // (n, k): one partial feature tile and one k-block; awkward sizes; few feature tiles with a
  // long k (k split across a cluster); Llama-3-8B's o projection.
  const std::vector<std::tuple<int64_t, int64_t>> shapes = {
      {8, 64}, {136, 72}, {1000, 520}, {264, 4104}, {4096, 4096}};
  for (auto [n, k] : shapes) {
    for (int64_t m : {1, 17, 33, 64, 100, 129, 256, 300}) {
      if (n * k > 1'000'000 && m != 64 && m != 256) continue;  // keep the CPU reference quick
      const int64_t x_cols = k + 8;  // x lives in the first k columns of wider rows
      Buffer x_wide = host_random({m, x_cols}, 1.f);
      Buffer w = host_random({n, k}, 0.1f), bias = host_random({n}, 1.f);
      const Tensor x = x_wide.tensor().slice_last(0, k);
      Buffer want(cpu_allocator(), DType::kF32, {m, n}),
          want_nobias(cpu_allocator(), DType::kF32, {m, n});
      linear(x, w, bias, want, cpu_);
      linear(x, w, Tensor(), want_nobias, cpu_);
      Buffer magnitude(cpu_allocator(), DType::kF32, {m, n});
      linear(absolute(x), absolute(w), absolute(bias), magnitude, cpu_);

      Buffer dx = to_device(x_wide), dw = to_device(w), db = to_device(bias);
      const Tensor dx_view = dx.tensor().slice_last(0, k);
      Buffer y32 = poisoned(DType::kF32, {m, n});
      ASSERT_TRUE(hopper().applies(dx_view, dw, db, y32)) << m << "x" << n << "x" << k;
      hopper().run(dx_view, dw, db, y32, stream_.get());
      // f32 out: only the summation order differs from the CPU's.
      EXPECT_LT(err_over_magnitude(to_host(y32), want, magnitude), 1e-5)
          << m << "x" << n << "x" << k << " f32";
      Buffer y16 = poisoned(DType::kBF16, {m, n});
      hopper().run(dx_view, dw, Tensor(), y16, stream_.get());
      EXPECT_LT(rel_err(to_host(y16), want_nobias), 1e-2) << m << "x" << n << "x" << k;
      // The op, with this stream's linear layers sent to the Hopper GEMM.
      ASSERT_TRUE(set_linear_backend(stream_.get(), "hopper").ok());
      Buffer via_op = poisoned(DType::kBF16, {m, n});
      linear(dx_view, dw, db, via_op, stream_.get());
      EXPECT_LT(rel_err(to_host(via_op), want), 1e-2) << m << "x" << n << "x" << k << " op";
    }
  }
}

TEST_F(CudaHopperGemm, FusedGateUpSiluMatchesUnfusedOps) {
  for (int64_t inter : {8, 200, 1000}) {
    for (int64_t k : {64, 1288, 4096}) {
      for (int64_t m : {17, 64, 200, 256}) {
        Buffer x = host_random({m, k}, 1.f), w = host_random({2 * inter, k}, 0.2f);
        Buffer want = silu_mul_reference(x, w, inter);
        Buffer dx = to_device(x), dw = to_device(w);
        Buffer out = poisoned(DType::kBF16, {m, inter});
        ASSERT_TRUE(hopper().applies_silu_and_mul(dx, dw, out));
        hopper().run_silu_and_mul(dx, dw, out, stream_.get());
        EXPECT_LT(rel_err(to_host(out), want), 2e-2) << m << "x" << inter << "x" << k;
        // The op, with this stream's linear layers sent to the Hopper GEMM.
        ASSERT_TRUE(set_linear_backend(stream_.get(), "hopper").ok());
        Buffer scratch(gpu_, DType::kBF16, {m, 2 * inter});
        Buffer via_op = poisoned(DType::kBF16, {m, inter});
        linear_silu_and_mul(dx, dw, scratch, via_op, stream_.get());
        EXPECT_LT(rel_err(to_host(via_op), want), 2e-2) << m << "x" << inter << "x" << k;
      }
    }
  }
}

// Repeated runs of one shape give bit-identical results (no race in the cluster reduction).
TEST_F(CudaHopperGemm, Deterministic) {
  const int64_t m = 200, n = 264, k = 4104;
  Buffer x = to_device(host_random({m, k}, 1.f)), w = to_device(host_random({n, k}, 0.1f));
  Buffer first(gpu_, DType::kF32, {m, n}), again(gpu_, DType::kF32, {m, n});
  hopper().run(x, w, Tensor(), first, stream_.get());
  Buffer want = to_host(first);
  for (int rep = 0; rep < 20; ++rep) {
    hopper().run(x, w, Tensor(), again, stream_.get());
    Buffer got = to_host(again);
    for (int64_t i = 0; i < m * n; ++i) {
      ASSERT_EQ(got.data<float>()[i], want.data<float>()[i]) << "rep " << rep << " at " << i;
    }
  }
}

// Grouped tiles whose real rows end early (groups.row_entry: padding after them) multiply only
// up to their last real row on the one-CTA-per-tile kernel, rounded up to a wgmma width: every
// real row equals the run that multiplies whole tiles, bit for bit, in both modes, at each width
// (64 to 256). That kernel takes f32 outputs, and bf16 ones on 256-token tiles over k past 1024
// (hopper_grouped_runs_persistent). x's padding rows are NaN (the gather leaves them
// unwritten): the whole-tile run's padding rows come out NaN, the trimmed run's past its width
// exactly 0, which shows the MMAs stopped there.
TEST_F(CudaHopperGemm, GroupedTilesStopAtTheirLastRealRow) {
  struct Case {
    int tile;
    bool silu;
    DType out;
    int64_t k;
  };
  for (const Case c : {Case{256, false, DType::kF32, 200}, Case{256, false, DType::kBF16, 2112},
                       Case{256, true, DType::kBF16, 2112}, Case{128, false, DType::kF32, 200}}) {
    ASSERT_FALSE(cuda::hopper_grouped_runs_persistent(c.tile, (c.k + 63) / 64) &&
                 c.out == DType::kBF16)
        << "a case the persistent kernel would take";
    const std::vector<int32_t> real_rows = c.tile == 256
                                               ? std::vector<int32_t>{1, 64, 65, 130, 193, 256}
                                               : std::vector<int32_t>{1, 64, 65, 128};
    const std::vector<int32_t> tile_expert = {0, 1, 1, 0, 1, 0};
    const int64_t tiles = static_cast<int64_t>(real_rows.size()), m = tiles * c.tile;
    const int64_t entries = 100'000;  // any entry below it is real
    std::vector<int32_t> row_entry(m);
    for (int64_t r = 0; r < m; ++r) {
      row_entry[r] = r % c.tile < real_rows[r / c.tile] ? static_cast<int32_t>(r) : entries;
    }
    auto width_of = [&](int64_t r) {  // the MMAs' rows in row r's tile
      return (real_rows[r / c.tile] + 63) / 64 * 64;
    };
    Buffer d_entry = upload_i32(row_entry), d_expert = upload_i32(tile_expert),
           d_used = upload_i32({static_cast<int32_t>(m)});
    Buffer host_x = host_random({m, c.k}, 1.f);
    for (int64_t r = 0; r < m; ++r) {
      if (row_entry[r] == entries) std::fill_n(host_x.data<float>() + r * c.k, c.k, NAN);
    }
    Buffer x = to_device(host_x);
    const int64_t expert_rows = c.silu ? 144 : 136;  // a partial feature tile either way
    Buffer w = to_device(host_random({2 * expert_rows, c.k}, 0.1f));
    const int64_t n = c.silu ? expert_rows / 2 : expert_rows;
    auto run = [&](bool trimmed) {
      cuda::HopperGroups g{.token_tile = c.tile,
                           .tile_expert = d_expert.tensor().data<int32_t>(),
                           .rows_used = d_used.tensor().data<int32_t>(),
                           .expert_rows = expert_rows};
      if (trimmed) {
        g.row_entry = d_entry.tensor().data<int32_t>();
        g.entries = entries;
      }
      Buffer y = poisoned(c.out, {m, n});
      if (c.silu) {
        hopper().run_grouped_silu_and_mul(x, w, g, y, stream_.get());
      } else {
        hopper().run_grouped(x, w, g, y, stream_.get());
      }
      return to_host(y);
    };
    Buffer whole = run(false), trimmed = run(true);
    const std::string mode = std::string(c.silu ? "silu" : "store") + " tile " +
                             std::to_string(c.tile) + " k " + std::to_string(c.k);
    for (int64_t r = 0; r < m; ++r) {
      const bool real = row_entry[r] != entries;
      for (int64_t col = 0; col < n; ++col) {
        const float want = whole.data<float>()[r * n + col];
        const float got = trimmed.data<float>()[r * n + col];
        const std::string at = mode + ": tile " + std::to_string(r / c.tile) + " row " +
                               std::to_string(r % c.tile) + " col " + std::to_string(col);
        if (real) {
          ASSERT_FALSE(std::isnan(want)) << at;
          ASSERT_EQ(got, want) << at;
        } else {
          ASSERT_TRUE(std::isnan(want)) << at << ": whole tiles multiply padding rows";
          if (r % c.tile >= width_of(r)) ASSERT_EQ(got, 0.f) << at << ": past the MMAs' rows";
        }
      }
    }
  }
}

// The persistent grouped kernel (bf16 outputs, tiles up to 256 over short k) against the
// one-CTA-per-tile kernel (f32 outputs) on the same tiles: plain stores are the f32 results
// rounded, bit for bit; the fused SiLU (I = 200: the last feature tile partial) is silu(gate) *
// up of the f32 projections as the kernels round them, up to __expf.
TEST_F(CudaHopperGemm, PersistentGroupedTilesMatchOneCtaTiles) {
  const int64_t k = 200, store_rows = 136, inter = 200;
  for (int tile : {16, 64, 128, 256}) {
    ASSERT_TRUE(cuda::hopper_grouped_runs_persistent(tile, (k + 63) / 64));
    const std::vector<int32_t> tile_expert = {1, 0, 0, 1, 1};
    const int64_t tiles = static_cast<int64_t>(tile_expert.size()), m = tiles * tile;
    Buffer d_expert = upload_i32(tile_expert), d_used = upload_i32({static_cast<int32_t>(m)});
    Buffer x = to_device(host_random({m, k}, 1.f));
    auto groups = [&](int64_t expert_rows) {
      return cuda::HopperGroups{.token_tile = tile,
                                .tile_expert = d_expert.tensor().data<int32_t>(),
                                .rows_used = d_used.tensor().data<int32_t>(),
                                .expert_rows = expert_rows};
    };
    // Plain stores: [2 experts x 136 rows, k].
    Buffer w = to_device(host_random({2 * store_rows, k}, 0.1f));
    Buffer y16 = poisoned(DType::kBF16, {m, store_rows});
    Buffer y32 = poisoned(DType::kF32, {m, store_rows});
    hopper().run_grouped(x, w, groups(store_rows), y16, stream_.get());
    hopper().run_grouped(x, w, groups(store_rows), y32, stream_.get());
    Buffer got = to_host(y16), want = to_host(y32);
    for (int64_t i = 0; i < m * store_rows; ++i) {
      ASSERT_FALSE(std::isnan(want.data<float>()[i])) << "tile " << tile << " at " << i;
      ASSERT_EQ(got.data<float>()[i], bf16_to_float(float_to_bf16(want.data<float>()[i])))
          << "tile " << tile << " at " << i;
    }
    // Gate/up + SiLU: [2 experts x (200 gate + 200 up rows), k].
    Buffer w_gate_up = to_device(host_random({2 * 2 * inter, k}, 0.1f));
    Buffer act = poisoned(DType::kBF16, {m, inter});
    Buffer projections = poisoned(DType::kF32, {m, 2 * inter});
    hopper().run_grouped_silu_and_mul(x, w_gate_up, groups(2 * inter), act, stream_.get());
    hopper().run_grouped(x, w_gate_up, groups(2 * inter), projections, stream_.get());
    Buffer got_act = to_host(act), proj = to_host(projections);
    Buffer want_act(cpu_allocator(), DType::kF32, {m, inter});
    auto round = [](float v) { return bf16_to_float(float_to_bf16(v)); };
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < inter; ++c) {
        const float g = round(proj.data<float>()[r * 2 * inter + c]);
        const float u = round(proj.data<float>()[r * 2 * inter + inter + c]);
        want_act.data<float>()[r * inter + c] = round(round(g / (1.f + std::exp(-g))) * u);
      }
    }
    EXPECT_LT(rel_err(got_act, want_act), 1e-2) << "tile " << tile;
  }
}

TEST_F(CudaHopperGemm, LinearBackendIsPerStream) {
  EXPECT_TRUE(set_linear_backend(stream_.get(), "hopper").ok());
  EXPECT_TRUE(cuda::StreamGemms::of(stream_.get()).hopper_for_linear);
  backend::CudaStream other(0);
  EXPECT_FALSE(cuda::StreamGemms::of(other.get()).hopper_for_linear);
  EXPECT_TRUE(set_linear_backend(stream_.get(), "auto").ok());
  EXPECT_FALSE(cuda::StreamGemms::of(stream_.get()).hopper_for_linear);
  EXPECT_EQ(set_linear_backend(stream_.get(), "cutlass").code(), StatusCode::kInvalidArgument);
}

TEST_F(CudaHopperGemm, DeclinesWhatItCannotTake) {
  Buffer w(gpu_, DType::kBF16, {32, 64}), x(gpu_, DType::kBF16, {20, 64});
  Buffer y(gpu_, DType::kBF16, {20, 32});
  EXPECT_TRUE(hopper().applies(x, w, Tensor(), y));
  Buffer w_odd_n(gpu_, DType::kBF16, {36, 64}), y_odd_n(gpu_, DType::kBF16, {20, 36});
  EXPECT_FALSE(hopper().applies(x, w_odd_n, Tensor(), y_odd_n));  // n % 8 != 0
  Buffer w_odd_k(gpu_, DType::kBF16, {32, 60}), x_odd_k(gpu_, DType::kBF16, {20, 60});
  EXPECT_FALSE(hopper().applies(x_odd_k, w_odd_k, Tensor(), y));  // k % 8 != 0
  Buffer w32(gpu_, DType::kF32, {32, 64}), x32(gpu_, DType::kF32, {20, 64});
  EXPECT_FALSE(hopper().applies(x32, w32, Tensor(), y));  // f32 runs through cuBLASLt
  Buffer f32_bias(gpu_, DType::kF32, {32});
  EXPECT_FALSE(hopper().applies(x, w, f32_bias, y));
  Buffer out(gpu_, DType::kBF16, {20, 16});
  EXPECT_TRUE(hopper().applies_silu_and_mul(x, w, out));
  Buffer out_f32(gpu_, DType::kF32, {20, 16});
  EXPECT_FALSE(hopper().applies_silu_and_mul(x, w, out_f32));
}

}  // namespace
}  // namespace sgl::kernels
