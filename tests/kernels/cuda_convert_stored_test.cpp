// convert_stored on the GPU against the host conversion, bit for bit: every stored format into
// f32, bf16 and f16, from an unaligned source, for one block, an awkward number of blocks and
// more values than the grid has threads. Label: cuda.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_stream.h"
#include "core/buffer.h"
#include "kernels/convert_stored.h"
#include "kernels/copy.h"
#include "random_stored.h"

namespace sgl::kernels {
namespace {

// Index of the first element whose bytes differ, or -1.
int64_t first_difference(const Tensor& a, const Tensor& b) {
  const size_t size = dtype_size(a.dtype());
  const auto* x = static_cast<const uint8_t*>(a.raw());
  const auto* y = static_cast<const uint8_t*>(b.raw());
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (std::memcmp(x + i * size, y + i * size, size) != 0) return i;
  }
  return -1;
}

TEST(CudaConvertStored, EveryFormatIntoEveryDtypeMatchesTheHostBitForBit) {
  backend::CudaAllocator gpu(0);
  backend::CudaStream stream(0);
  std::mt19937 rng(123);
  for (StoredFormat format : kStoredFormats) {
    const int64_t block = stored_block_elems(format);
    // 1 block; 129 blocks; past the kernel's 4096 x 256 threads (the grid-stride loop).
    for (int64_t n : {block, 129 * block, ((int64_t{1} << 21) + 7 * block) / block * block}) {
      const std::vector<uint8_t> bytes = test::random_stored(format, n, rng);
      // One leading byte: the source starts unaligned, as a staging copy may.
      Buffer src(gpu, DType::kF32, {static_cast<int64_t>(bytes.size() + 1 + 3) / 4});
      auto* src_bytes = static_cast<uint8_t*>(src.tensor().raw()) + 1;
      copy_bytes_async(bytes.data(), Device::cpu(), src_bytes, src.tensor().device(), bytes.size(),
                       stream.get());
      for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
        SCOPED_TRACE(std::string(stored_format_name(format)) + " -> " +
                     std::string(dtype_name(dtype)) + ", " + std::to_string(n) + " values");
        Buffer host(cpu_allocator(), dtype, {n});
        convert_stored(bytes.data(), format, host, backend::Stream::cpu());
        Buffer dev(gpu, dtype, {n});
        convert_stored(src_bytes, format, dev, stream.get());
        Buffer back(cpu_allocator(), dtype, {n});
        copy(dev, back, stream.get());  // synchronous for a host destination
        const int64_t i = first_difference(back, host);
        EXPECT_EQ(i, -1) << "value " << i << " (block " << i / block << ", " << i % block << ")";
      }
    }
  }
}

}  // namespace
}  // namespace sgl::kernels
