// Stored-format conversion on the host: the per-value decoders the CUDA kernels run
// (kernels/stored_values.h, compiled here for the host) give the host block decoders' bits for
// every format, and the host conversion rounds values to bf16 / f16 to nearest even from a
// source of any alignment.
#include "kernels/convert_stored.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/stored_values.h"
#include "random_stored.h"

namespace sgl::kernels {
namespace {

template <StoredFormat F>
std::vector<float> per_value(const uint8_t* src, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[i] = stored_values::stored_value<F>(src, i);
  return out;
}

// The values at `src` as the device decodes them, one at a time.
std::vector<float> per_value(StoredFormat format, const uint8_t* src, int64_t n) {
  return stored_values::visit_format(
      format, [&](auto tag) { return per_value<decltype(tag)::value>(src, n); });
}

std::vector<float> host_f32(StoredFormat format, const uint8_t* src, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  convert_stored(src, format, Tensor(out.data(), DType::kF32, {n}), backend::Stream::cpu());
  return out;
}

std::vector<uint16_t> host_16(StoredFormat format, const uint8_t* src, int64_t n, DType dtype) {
  std::vector<uint16_t> out(static_cast<size_t>(n));
  convert_stored(src, format, Tensor(out.data(), dtype, {n}), backend::Stream::cpu());
  return out;
}

// Index of the first value whose bits differ, or -1.
int64_t first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return static_cast<int64_t>(i);
  }
  return -1;
}

TEST(ConvertStoredTest, PerValueDecodersGiveTheBlockDecodersBits) {
  std::mt19937 rng(7);
  for (StoredFormat format : kStoredFormats) {
    SCOPED_TRACE(std::string(stored_format_name(format)));
    const int64_t n = 200 * stored_block_elems(format);
    const std::vector<uint8_t> bytes = test::random_stored(format, n, rng);
    const std::vector<float> expect = host_f32(format, bytes.data(), n);
    const std::vector<float> got = per_value(format, bytes.data(), n);
    const int64_t i = first_difference(got, expect);
    EXPECT_EQ(i, -1) << "value " << i << " (block " << i / stored_block_elems(format) << ", "
                     << i % stored_block_elems(format) << "): " << got[i] << " vs " << expect[i];
  }
}

TEST(ConvertStoredTest, RoundsToBf16AndF16ToNearestEvenFromAnyAlignment) {
  std::mt19937 rng(11);
  for (StoredFormat format : kStoredFormats) {
    SCOPED_TRACE(std::string(stored_format_name(format)));
    const int64_t n = 3 * stored_block_elems(format);
    const std::vector<uint8_t> bytes = test::random_stored(format, n, rng);
    std::vector<uint8_t> unaligned(bytes.size() + 1);
    std::memcpy(unaligned.data() + 1, bytes.data(), bytes.size());
    const std::vector<float> f32 = host_f32(format, bytes.data(), n);
    EXPECT_EQ(first_difference(host_f32(format, unaligned.data() + 1, n), f32), -1);
    const std::vector<uint16_t> bf16 = host_16(format, unaligned.data() + 1, n, DType::kBF16);
    const std::vector<uint16_t> f16 = host_16(format, unaligned.data() + 1, n, DType::kF16);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(bf16[i], float_to_bf16(f32[i])) << i;
      ASSERT_EQ(f16[i], float_to_f16(f32[i])) << i;
    }
  }
}

// The random blocks above are what the CUDA tests feed the device: they reach every corner
// the decoders have (every quant value, zero / subnormal / negative scales, f16 overflow).
TEST(ConvertStoredTest, RandomBlocksCoverSubnormalScalesAndF16Overflow) {
  std::mt19937 rng(3);
  for (StoredFormat format : kStoredFormats) {
    if (test::f16_scale_offsets(format).empty()) continue;
    SCOPED_TRACE(std::string(stored_format_name(format)));
    const int64_t n = 400 * stored_block_elems(format);
    const std::vector<uint8_t> bytes = test::random_stored(format, n, rng);
    const std::vector<float> f32 = host_f32(format, bytes.data(), n);
    const std::vector<uint16_t> f16 = host_16(format, bytes.data(), n, DType::kF16);
    int tiny = 0, inf = 0, negative = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(std::isfinite(f32[i])) << i;
      tiny += f32[i] != 0 && std::abs(f32[i]) < 6.1e-5f ? 1 : 0;  // below f16's normal range
      inf += (f16[i] & 0x7fff) == 0x7c00 ? 1 : 0;
      negative += f32[i] < 0 ? 1 : 0;
    }
    EXPECT_GT(tiny, 0);
    EXPECT_GT(inf, 0);
    EXPECT_GT(negative, 0);
  }
}

}  // namespace
}  // namespace sgl::kernels
