// WeightUploader on the CPU device: chunking through small staging slots on several threads,
// row reordering, conversions from every stored format, the f32 path and its errors.
#include "model/weight_uploader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/random_stored.h"

namespace sgl::model {
namespace {

struct Stored {
  std::vector<uint8_t> bytes;
  std::vector<float> values;  // what the bytes hold, row by row in file order
};

// `rows` x `cols` random values stored in `format`.
Stored make_stored(kernels::StoredFormat format, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  Stored s;
  const int64_t n = rows * cols;
  s.values.resize(static_cast<size_t>(n));
  if (kernels::stored_block_elems(format) > 1) {  // random blocks; values as the host decodes
    s.bytes = kernels::test::random_stored(format, n, rng);
    kernels::convert_stored(s.bytes.data(), format, Tensor(s.values.data(), DType::kF32, {n}),
                            backend::Stream::cpu());
    return s;
  }
  for (int64_t i = 0; i < n; ++i) {
    float v = dist(rng);
    uint8_t raw[4];
    size_t size = 2;
    if (format == kernels::StoredFormat::kF32) {
      std::memcpy(raw, &v, 4);
      size = 4;
    } else {
      const uint16_t bits =
          format == kernels::StoredFormat::kF16 ? float_to_f16(v) : float_to_bf16(v);
      v = format == kernels::StoredFormat::kF16 ? f16_to_float(bits) : bf16_to_float(bits);
      std::memcpy(raw, &bits, 2);
    }
    s.values[i] = v;
    s.bytes.insert(s.bytes.end(), raw, raw + size);
  }
  return s;
}

float stored_as(float v, DType dtype) {
  if (dtype == DType::kBF16) return bf16_to_float(float_to_bf16(v));
  if (dtype == DType::kF16) return f16_to_float(float_to_f16(v));
  return v;
}

float load(const Buffer& b, int64_t i) {
  switch (b.tensor().dtype()) {
    case DType::kF32:
      return b.data<float>()[i];
    case DType::kBF16:
      return bf16_to_float(static_cast<const uint16_t*>(b.tensor().raw())[i]);
    default:
      return f16_to_float(static_cast<const uint16_t*>(b.tensor().raw())[i]);
  }
}

struct Case {
  kernels::StoredFormat format;
  DType dtype;
  bool reorder;
};

TEST(WeightUploaderTest, EveryFormatThroughSmallSlotsOnFourThreads) {
  const int64_t rows = 37, cols = 256;  // a row is one k-quant super-block or 8 small blocks
  std::vector<Case> cases;
  for (kernels::StoredFormat f : kernels::kStoredFormats) {
    for (DType d : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (bool reorder : {false, true}) cases.push_back({f, d, reorder});
    }
  }
  std::vector<Stored> stored;
  std::vector<Buffer> outputs;
  std::vector<std::vector<int64_t>> orders;
  {
    // Slots of 3 rows at most (for f32 rows): every tensor spans many chunks and workers.
    WeightUploader uploader(cpu_allocator(), {4, 3 * cols * 4});
    for (size_t i = 0; i < cases.size(); ++i) {
      stored.push_back(make_stored(cases[i].format, rows, cols, static_cast<uint32_t>(i)));
      StoredTensor t;
      t.format = cases[i].format;
      t.data = stored.back().bytes.data();
      t.rows = rows;
      t.row_bytes = stored.back().bytes.size() / rows;
      if (cases[i].reorder) {
        for (int64_t r = 0; r < rows; ++r) t.row_order.push_back((r * 5 + 3) % rows);
      }
      orders.push_back(t.row_order);
      outputs.emplace_back(cpu_allocator(), cases[i].dtype, std::vector<int64_t>{rows, cols});
      ASSERT_TRUE(uploader.can_stage(t));
      uploader.enqueue(std::move(t), outputs.back());
    }
    ASSERT_TRUE(uploader.finish().ok());
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(std::string(kernels::stored_format_name(cases[i].format)) + " -> " +
                 std::string(dtype_name(cases[i].dtype)) + (cases[i].reorder ? " reordered" : ""));
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t from = orders[i].empty() ? r : orders[i][r];
      for (int64_t c = 0; c < cols; ++c) {
        ASSERT_EQ(load(outputs[i], r * cols + c),
                  stored_as(stored[i].values[from * cols + c], cases[i].dtype))
            << "row " << r << " col " << c;
      }
    }
  }
}

TEST(WeightUploaderTest, F32ReadsAndTheFirstErrorComeBackFromFinish) {
  WeightUploader uploader(cpu_allocator(), {3, 256});
  Buffer a(cpu_allocator(), DType::kBF16, {100});
  Buffer b(cpu_allocator(), DType::kF32, {100});
  uploader.enqueue_f32(
      [](float* out) {
        for (int i = 0; i < 100; ++i) out[i] = static_cast<float>(i) + 0.5f;
        return Status::ok_status();
      },
      a, 400);
  uploader.enqueue_f32([](float*) { return invalid_argument("bad tensor"); }, b, 400);
  const Status s = uploader.finish();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "bad tensor");
  EXPECT_EQ(uploader.bytes_queued(), 800u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(load(a, i), stored_as(i + 0.5f, DType::kBF16));
}

TEST(WeightUploaderTest, DestructionWaitsForQueuedWork) {
  Stored s = make_stored(kernels::StoredFormat::kF32, 512, 32, 7);
  Buffer out(cpu_allocator(), DType::kF32, {512, 32});
  {
    WeightUploader uploader(cpu_allocator(), {2, 128});
    StoredTensor t{kernels::StoredFormat::kF32, s.bytes.data(), 512, 128, {}};
    uploader.enqueue(std::move(t), out);
  }  // no finish(): the destructor waits
  EXPECT_EQ(std::memcmp(out.data<float>(), s.values.data(), s.bytes.size()), 0);
}

}  // namespace
}  // namespace sgl::model
