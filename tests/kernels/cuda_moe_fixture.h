// Shared pieces of the CUDA MoE tests: a fast seeded generator, host <-> device copies, one MoE
// layer's inputs and routing (bf16-exact when the dtype is bf16), fused_moe on the GPU, and the
// check against the CPU reference with its error bound.
//
// The bound (first order, per output element). The GPU rounds where transformers' bf16 ops do:
// gate and up (f32 sums) to bf16, silu(gate) to bf16, the product to bf16 (act), then sums the
// down projection in f32, weights and sums the k slots in f32 and rounds the output. With unit
// roundoff u (2^-9 for bf16; 2^-19 for f32, where __expf's few ulps in silu are the largest
// rounding) and gamma(n) = (n / 16 + 8) 2^-23 for an f32 sum of n products (a chain of n / 16
// MMA accumulations, each counted twice, or a lane's n / 32 products plus a warp tree):
//   |act~ - act| <= u (3 |s| |up| + 1.1 |g| |up|) + gamma(H) (|s| U + 1.1 |up| G)
// where g, up are the exact projections, s = silu(g), G and U the sums of |w x| of gate and up
// (|silu'| <= 1.1 carries g's error into s), and then
//   |out~ - out| <= sum_j |w_j| sum_i |down[h, i]| |act~_i - act_i|
//                   + (gamma(I) + gamma(k) + u) sum_j |w_j| sum_i |down[h, i] act_i| + u_out |out|
// (the u there: the Hopper path rounds each slot's down projection to bf16 before the sum).
// An element fails beyond twice that. Being a worst case over every rounding, it is loose by
// about sqrt(I) (errors of random sign mostly cancel), so a second check bounds the relative
// RMS error over the whole output: 2^-6 for bf16 (the roundings above give about 2^-8) and
// 2e-5 for f32. Together they catch a wrong expert, token or slot (O(1) errors) and a dropped
// or doubled slot (an error near |out| / sqrt(k) in every element).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_stream.h"
#include "core/buffer.h"
#include "core/half.h"
#include "device_copies.h"
#include "kernels/copy.h"
#include "kernels/moe.h"

namespace sgl::kernels::test {

// fn(i) for i in [0, n) on all cores (the CPU references of the large shapes are slow).
template <typename Fn>
void parallel_for(int64_t n, Fn fn) {
  const int64_t threads =
      std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, std::max<int64_t>(n, 1));
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < threads; ++w) {
    pool.emplace_back([&, w] {
      for (int64_t i = w; i < n; i += threads) fn(i);
    });
  }
  for (auto& t : pool) t.join();
}

// Uniform values of standard deviation `scale` from a hash of (seed, i): fast enough for
// Mixtral's billions of weights, and the same on every machine.
inline float hashed_uniform(uint64_t seed, uint64_t i, float scale) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + (i + 1) * 0xD1B54A32D192ED03ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const double unit = static_cast<double>(z >> 11) * 0x1.0p-53;  // [0, 1)
  return static_cast<float>((2 * unit - 1) * 1.7320508075688772 * scale);
}

// n such values, rounded to bf16 when `bf16` (so host and device see the same numbers).
inline std::vector<float> random_values(int64_t n, uint64_t seed, float scale, bool bf16) {
  std::vector<float> v(n);
  constexpr int64_t kPiece = 1 << 20;
  parallel_for((n + kPiece - 1) / kPiece, [&](int64_t piece) {
    for (int64_t i = piece * kPiece; i < std::min(n, (piece + 1) * kPiece); ++i) {
      const float f = hashed_uniform(seed, i, scale);
      v[i] = bf16 ? bf16_to_float(float_to_bf16(f)) : f;
    }
  });
  return v;
}

class CudaMoeTest : public ::testing::Test {
 protected:
  backend::CudaAllocator gpu_{0};
  backend::CudaStream stream_{0};

  backend::Stream stream() const { return stream_.get(); }

  // A device copy of host values in `dtype` (f32 or bf16; converted on all cores: Mixtral's
  // weights are 1.4 G values).
  Buffer upload(const std::vector<float>& v, std::vector<int64_t> shape, DType dtype) {
    Buffer dev(gpu_, dtype, shape);
    if (dtype == DType::kF32) {
      copy(Tensor(const_cast<float*>(v.data()), DType::kF32, shape), dev, stream());
      return dev;
    }
    SGL_CHECK(dtype == DType::kBF16) << "upload: f32 or bf16";
    std::vector<uint16_t> bits(v.size());
    constexpr int64_t kPiece = 1 << 20;
    const int64_t n = static_cast<int64_t>(v.size());
    parallel_for((n + kPiece - 1) / kPiece, [&](int64_t piece) {
      for (int64_t i = piece * kPiece; i < std::min(n, (piece + 1) * kPiece); ++i) {
        bits[i] = float_to_bf16(v[i]);
      }
    });
    copy(Tensor(bits.data(), DType::kBF16, shape), dev, stream());
    return dev;
  }
  Buffer upload_i32(const std::vector<int32_t>& v, std::vector<int64_t> shape) {
    Buffer dev(gpu_, DType::kI32, shape);
    copy(Tensor(const_cast<int32_t*>(v.data()), DType::kI32, shape), dev, stream());
    return dev;
  }
  // A device tensor of `value` everywhere (NaN poisons outputs a kernel must write).
  Buffer filled(std::vector<int64_t> shape, DType dtype, float value) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return upload(std::vector<float>(n, value), shape, dtype);
  }
  Buffer filled_i32(std::vector<int64_t> shape, int32_t value) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return upload_i32(std::vector<int32_t>(n, value), shape);
  }
  std::vector<float> download(const Tensor& dev) {
    Buffer host = to_host_f32(dev, stream());
    return std::vector<float>(host.data<float>(), host.data<float>() + dev.numel());
  }
  std::vector<int32_t> download_i32(const Tensor& dev) {
    std::vector<int32_t> host(dev.numel());
    copy(dev, Tensor(host.data(), DType::kI32, dev.shape()), stream());
    return host;
  }
};

enum class Routing {
  kRandom,        // moe_route (softmax, renormalised) of random logits
  kFirstExperts,  // every token to experts 0..k-1: k full groups, the other experts empty
  kOneExpert,     // every slot of every token to one expert (repeats within a token)
};

// One MoE layer's inputs. x is stored [T, x_stride] with NaN between H and the stride, so a
// kernel reading past a row's end poisons its output.
struct MoeProblem {
  int64_t tokens = 0, hidden = 0, inter = 0, experts = 0, top_k = 0, x_stride = 0;
  DType dtype = DType::kBF16;
  Routing routing = Routing::kRandom;
  std::vector<float> x, weights;
  std::vector<int32_t> ids;
  // Shared by head(): the large shapes' weights are generated once.
  std::shared_ptr<const std::vector<float>> w13, w2;

  MoeProblem(int64_t t, int64_t h, int64_t i, int64_t e, int64_t k, DType type, Routing r,
             uint64_t seed, int64_t stride = 0)
      : tokens(t),
        hidden(h),
        inter(i),
        experts(e),
        top_k(k),
        x_stride(stride > 0 ? stride : h),
        dtype(type),
        routing(r) {
    const bool bf16 = type == DType::kBF16;
    const std::vector<float> dense = random_values(t * h, seed, 1.f, bf16);
    x.assign(t * x_stride, NAN);
    for (int64_t row = 0; row < t; ++row) {
      std::copy_n(dense.begin() + row * h, h, x.begin() + row * x_stride);
    }
    w13 = std::make_shared<const std::vector<float>>(
        random_values(e * 2 * i * h, seed + 1, 1.f / std::sqrt(float(h)), bf16));
    w2 = std::make_shared<const std::vector<float>>(
        random_values(e * h * i, seed + 2, 1.f / std::sqrt(float(i)), bf16));
    weights.assign(t * k, 0.f);
    ids.assign(t * k, 0);
    if (r == Routing::kRandom) {
      std::vector<float> logits = random_values(t * e, seed + 3, 1.f, false);
      moe_route(Tensor(logits.data(), DType::kF32, {t, e}), MoeScoring::kSoftmax, true,
                Tensor(weights.data(), DType::kF32, {t, k}),
                Tensor(ids.data(), DType::kI32, {t, k}), backend::Stream::cpu());
      return;
    }
    const std::vector<float> w = random_values(t * k, seed + 4, 0.3f, false);
    for (int64_t n = 0; n < t * k; ++n) {
      ids[n] = r == Routing::kFirstExperts ? static_cast<int32_t>(n % k)
                                           : static_cast<int32_t>(std::min<int64_t>(3, e - 1));
      weights[n] = 0.5f + w[n];
    }
  }

  // The same layer with a share of the pairs masked (id -1, as expert parallelism masks the
  // other ranks' experts): each pair with probability `share`, and every pair of every fifth
  // token (tokens with no expert).
  MoeProblem masked(double share, uint64_t seed) const {
    MoeProblem p = *this;
    const std::vector<float> u = random_values(tokens * top_k, seed, 1.f, false);
    for (int64_t n = 0; n < tokens * top_k; ++n) {
      // random_values is uniform of standard deviation 1: |u| <= sqrt(3).
      if ((u[n] / std::sqrt(3.f) + 1) / 2 < share || n / top_k % 5 == 0) p.ids[n] = -1;
    }
    return p;
  }

  // The same layer and routing for the first n tokens only.
  MoeProblem head(int64_t n) const {
    MoeProblem p = *this;
    p.tokens = n;
    p.x.resize(n * x_stride);
    p.weights.resize(n * top_k);
    p.ids.resize(n * top_k);
    return p;
  }

  std::string describe() const {
    std::ostringstream s;
    s << dtype_name(dtype) << " T=" << tokens << " H=" << hidden << " I=" << inter
      << " E=" << experts << " k=" << top_k;
    if (x_stride != hidden) s << " x_stride=" << x_stride;
    if (routing == Routing::kFirstExperts) s << " routing=first-k-experts";
    if (routing == Routing::kOneExpert) s << " routing=one-expert";
    const auto masked = std::count(ids.begin(), ids.end(), -1);
    if (masked > 0) s << " masked=" << masked << "/" << ids.size();
    return s.str();
  }

  Tensor x_view() const {
    return Tensor(const_cast<float*>(x.data()), DType::kF32, {tokens, x_stride})
        .slice_last(0, hidden);
  }
  Tensor w13_view() const {
    return Tensor(const_cast<float*>(w13->data()), DType::kF32, {experts, 2 * inter, hidden});
  }
  Tensor w2_view() const {
    return Tensor(const_cast<float*>(w2->data()), DType::kF32, {experts, hidden, inter});
  }

  // fused_moe_reference, one token per call on all cores.
  std::vector<float> reference() const {
    std::vector<float> ref(tokens * hidden);
    const Tensor xt = x_view(), w13t = w13_view(), w2t = w2_view();
    parallel_for(tokens, [&](int64_t t) {
      fused_moe_reference(
          xt.slice_rows(t, 1), w13t, w2t,
          Tensor(const_cast<float*>(weights.data()) + t * top_k, DType::kF32, {1, top_k}),
          Tensor(const_cast<int32_t*>(ids.data()) + t * top_k, DType::kI32, {1, top_k}),
          Tensor(ref.data() + t * hidden, DType::kF32, {1, hidden}));
    });
    return ref;
  }

  // The bound of the file comment for every output element.
  std::vector<double> error_bound(const std::vector<float>& ref) const {
    const bool bf16 = dtype == DType::kBF16;
    const double unit = bf16 ? 0x1p-9 : 0x1p-19, unit_out = bf16 ? 0x1p-9 : 0x1p-24;
    auto gamma = [](int64_t n) { return (static_cast<double>(n) / 16 + 8) * 0x1p-23; };
    const double partial_unit = bf16 ? 0x1p-9 : 0.0;  // bf16 partials (Hopper path)
    std::vector<double> bound(tokens * hidden, 0.0);
    parallel_for(tokens, [&](int64_t t) {
      std::vector<double> act_err(inter), act_abs(inter);
      const float* xt = x.data() + t * x_stride;
      double* b = bound.data() + t * hidden;
      for (int64_t j = 0; j < top_k; ++j) {
        const int64_t e = ids[t * top_k + j];
        if (e < 0) continue;  // masked: adds nothing
        const double w = std::abs(double{weights[t * top_k + j]});
        const float* gate = w13->data() + e * 2 * inter * hidden;
        const float* up = gate + inter * hidden;
        for (int64_t i = 0; i < inter; ++i) {
          double g = 0, u = 0, g_abs = 0, u_abs = 0;
          for (int64_t c = 0; c < hidden; ++c) {
            const double gx = double{gate[i * hidden + c]} * xt[c];
            const double ux = double{up[i * hidden + c]} * xt[c];
            g += gx, u += ux, g_abs += std::abs(gx), u_abs += std::abs(ux);
          }
          const double s = g / (1 + std::exp(-g));
          act_err[i] = unit * (3 * std::abs(s * u) + 1.1 * std::abs(g * u)) +
                       gamma(hidden) * (std::abs(s) * u_abs + 1.1 * std::abs(u) * g_abs);
          act_abs[i] = std::abs(s * u);
        }
        const float* down = w2->data() + e * hidden * inter;
        for (int64_t h = 0; h < hidden; ++h) {
          double carried = 0, terms = 0;
          for (int64_t i = 0; i < inter; ++i) {
            const double d = std::abs(double{down[h * inter + i]});
            carried += d * act_err[i];
            terms += d * act_abs[i];
          }
          b[h] += w * (carried + (gamma(inter) + gamma(top_k) + partial_unit) * terms);
        }
      }
      for (int64_t h = 0; h < hidden; ++h) b[h] += unit_out * std::abs(ref[t * hidden + h]);
    });
    return bound;
  }
};

// got against fused_moe_reference: every element within twice its bound, and the relative RMS
// error within the dtype's limit. The message names the case and the first failing element.
inline ::testing::AssertionResult matches_reference(const MoeProblem& p,
                                                    const std::vector<float>& got) {
  const std::vector<float> ref = p.reference();
  const std::vector<double> bound = p.error_bound(ref);
  double err2 = 0, ref2 = 0, worst_ratio = 0;
  for (size_t n = 0; n < ref.size(); ++n) {
    const double diff = std::abs(double{got[n]} - ref[n]);
    if (!(diff <= 2 * bound[n])) {  // NaN fails too
      return ::testing::AssertionFailure()
             << p.describe() << ": out[" << n / p.hidden << ", " << n % p.hidden << "] = " << got[n]
             << ", reference " << ref[n] << ", |diff| " << diff << " > 2 x bound " << bound[n];
    }
    err2 += diff * diff;
    ref2 += double{ref[n]} * ref[n];
    worst_ratio = std::max(worst_ratio, diff / (bound[n] + 1e-300));
  }
  const double rms = std::sqrt(err2 / std::max(ref2, 1e-300));
  const double limit = p.dtype == DType::kBF16 ? 0x1p-6 : 2e-5;
  if (!(rms <= limit)) {
    return ::testing::AssertionFailure()
           << p.describe() << ": relative RMS error " << rms << " > " << limit
           << " (worst |diff| / bound " << worst_ratio << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace sgl::kernels::test
