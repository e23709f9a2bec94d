// Sampling arithmetic shared bit for bit by the CPU sampler and the CUDA sampling kernel: the
// counter RNG, the integer token weights the filters and the draw work on, and their thresholds.
// The rules themselves are written once, in sampling/sampler.h.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace sgl::kernels::sampling_math {

// Weights are exp((logit - max) / T) in fixed point: the most likely token weighs 2^45.
// Sums of up to 2^18 weights fit in 63 bits, so every sum below is exact and independent of the
// order it is taken in; that is what lets a parallel kernel agree with a sequential loop.
constexpr int kWeightBits = 45;
constexpr uint64_t kMaxWeight = uint64_t{1} << kWeightBits;
constexpr int64_t kMaxVocab = int64_t{1} << 18;
// Below this exponent (e^-32 < 2^-45) every weight is 0.
constexpr double kMinExponent = -32.0;

SGL_HOST_DEVICE inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// 53 uniform random bits from (seed, step): counter-based, so a request's draws do not depend
// on which other requests share its batch. uniform = bits * 2^-53 lies in [0, 1).
SGL_HOST_DEVICE inline uint64_t random_bits53(uint64_t seed, uint64_t step) {
  return splitmix64(splitmix64(seed) ^ (step * 0xd1b54a32d192ed03ull)) >> 11;
}

// floor(bits53 * 2^-53 * mass), exactly (a 117-bit product); always < mass when mass > 0.
SGL_HOST_DEVICE inline uint64_t scale_draw(uint64_t bits53, uint64_t mass) {
#ifdef __CUDA_ARCH__
  const uint64_t hi = __umul64hi(bits53, mass), lo = bits53 * mass;
#else
  const unsigned __int128 product = static_cast<unsigned __int128>(bits53) * mass;
  const uint64_t hi = static_cast<uint64_t>(product >> 64), lo = static_cast<uint64_t>(product);
#endif
  return (hi << 11) | (lo >> 53);
}

// a * b + c with one rounding, on either side (correctly rounded by IEEE 754 on both).
SGL_HOST_DEVICE inline double fma_rn(double a, double b, double c) {
#ifdef __CUDA_ARCH__
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// rint (ties to even), ldexp and ceil of the side being compiled: the same results on both.
SGL_HOST_DEVICE inline double rint_rn(double x) {
#ifdef __CUDA_ARCH__
  return ::rint(x);
#else
  return std::rint(x);
#endif
}
SGL_HOST_DEVICE inline double ldexp_exact(double x, int exponent) {
#ifdef __CUDA_ARCH__
  return ::ldexp(x, exponent);
#else
  return std::ldexp(x, exponent);
#endif
}
SGL_HOST_DEVICE inline double ceil_exact(double x) {
#ifdef __CUDA_ARCH__
  return ::ceil(x);
#else
  return std::ceil(x);
#endif
}

// 2^extra_exponent * exp(t) for t in [kMinExponent, 0], built only from IEEE operations that round
// the same way everywhere (fma, *, -, rint, ldexp): the libraries' exp may differ in the last bit
// between host and device, this one may not. Accurate to a few 1e-16, far below the weights' 2^-45.
// NOTE: the source has no separate a * b + c, so no compiler can contract one into an fma.
SGL_HOST_DEVICE inline double exp_scaled(double t, int extra_exponent) {
  constexpr double kLog2e = 0x1.71547652b82fep+0;
  constexpr double kLn2Hi = 0x1.62e42fefa39efp-1, kLn2Lo = 0x1.abc9e3b39803fp-56;
  const double n = rint_rn(t * kLog2e);
  double r = fma_rn(-n, kLn2Hi, t);
  r = fma_rn(-n, kLn2Lo, r);  // |r| <= ln2 / 2
  // Taylor series of e^r to degree 12 (truncation error < 2e-16), Horner with fmas.
  double p = 0x1.1eed8eff8d898p-29;         // 1/12!
  p = fma_rn(p, r, 0x1.ae64567f544e4p-26);  // 1/11!
  p = fma_rn(p, r, 0x1.27e4fb7789f5cp-22);  // 1/10!
  p = fma_rn(p, r, 0x1.71de3a556c734p-19);  // 1/9!
  p = fma_rn(p, r, 0x1.a01a01a01a01ap-16);  // 1/8!
  p = fma_rn(p, r, 0x1.a01a01a01a01ap-13);  // 1/7!
  p = fma_rn(p, r, 0x1.6c16c16c16c17p-10);  // 1/6!
  p = fma_rn(p, r, 0x1.1111111111111p-7);   // 1/5!
  p = fma_rn(p, r, 0x1.5555555555555p-5);   // 1/4!
  p = fma_rn(p, r, 0x1.5555555555555p-3);   // 1/3!
  p = fma_rn(p, r, 0.5);
  p = fma_rn(p, r, 1.0);
  p = fma_rn(p, r, 1.0);
  return ldexp_exact(p, static_cast<int>(n) + extra_exponent);
}

// The exponent of a token's weight: (logit - max_logit) * inv_temperature, in double, where
// inv_temperature = 1.0 / double(temperature). Never positive.
SGL_HOST_DEVICE inline double weight_exponent(float logit, float max_logit,
                                              double inv_temperature) {
  return (static_cast<double>(logit) - static_cast<double>(max_logit)) * inv_temperature;
}

// The weight of exponent t: floor(2^45 * exp(t)), 0 below e^-32 (and for NaN).
SGL_HOST_DEVICE inline uint64_t weight_of_exponent(double t) {
  if (!(t >= kMinExponent)) return 0;
  if (t >= 0.0) return kMaxWeight;  // the maximum itself (t is never positive)
  return static_cast<uint64_t>(exp_scaled(t, kWeightBits));
}

// A token's weight: floor(2^45 * exp((logit - max_logit) / T)); 0 for -inf logits.
SGL_HOST_DEVICE inline uint64_t token_weight(float logit, float max_logit, double inv_temperature) {
  return weight_of_exponent(weight_exponent(logit, max_logit, inv_temperature));
}

// min-p keeps tokens whose weight is at least min_p times the top token's (2^45); never 0.
SGL_HOST_DEVICE inline uint64_t min_p_weight(float min_p) {
  if (!(min_p > 0.f)) return 1;
  if (min_p >= 1.f) return kMaxWeight;
  return static_cast<uint64_t>(ceil_exact(ldexp_exact(static_cast<double>(min_p), kWeightBits)));
}

// top-p drops a token once the weight before it exceeds this; top_p >= 1 drops none.
SGL_HOST_DEVICE inline uint64_t top_p_limit(float top_p, uint64_t total_weight) {
  if (top_p >= 1.f) return ~uint64_t{0};
  return static_cast<uint64_t>(static_cast<double>(top_p) * static_cast<double>(total_weight));
}

// The sampler's greedy rule (SamplingParams::is_greedy), for rows given as plain numbers.
SGL_HOST_DEVICE inline bool is_greedy_row(float temperature, int32_t top_k) {
  return temperature <= 1e-6f || top_k == 1;
}

}  // namespace sgl::kernels::sampling_math
