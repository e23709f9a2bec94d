// core: Status/Result, checks, tensor views, buffers, dtype and device parsing.
#include <gtest/gtest.h>

#include "core/base64.h"
#include "core/buffer.h"
#include "core/device.h"
#include "core/status.h"
#include "core/tensor.h"

namespace sgl {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return invalid_argument("not positive: " + std::to_string(v));
  return v;
}

Status chain(int v, int* out) {
  SGL_ASSIGN_OR_RETURN(*out, parse_positive(v));
  return Status::ok_status();
}

TEST(Base64, EncodesRfc4648Vectors) {
  const std::pair<std::string, std::string> cases[] = {{"", ""},
                                                       {"f", "Zg=="},
                                                       {"fo", "Zm8="},
                                                       {"foo", "Zm9v"},
                                                       {"foob", "Zm9vYg=="},
                                                       {"fooba", "Zm9vYmE="},
                                                       {"foobar", "Zm9vYmFy"},
                                                       {std::string("\xff\x00\xfe", 3), "/wD+"}};
  for (const auto& [bytes, encoded] : cases) EXPECT_EQ(base64_encode(bytes), encoded) << bytes;
}

TEST(Status, ResultCarriesValueOrError) {
  EXPECT_EQ(*parse_positive(3), 3);
  auto bad = parse_positive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().to_string(), "InvalidArgument: not positive: -1");
  int out = 0;
  EXPECT_TRUE(chain(5, &out).ok());
  EXPECT_EQ(out, 5);
  EXPECT_EQ(chain(0, &out).with_context("config.json").message(), "config.json: not positive: 0");
  EXPECT_DEATH((void)bad.value(), "not positive");
}

TEST(Check, AbortsWithMessage) {
  EXPECT_DEATH(SGL_CHECK_EQ(1, 2) << "extra context", "1 == 2.*\\(1 vs 2\\) extra context");
  SGL_CHECK(true) << "never printed";
}

TEST(Tensor, ViewsShareMemory) {
  std::vector<float> data(24);
  for (int i = 0; i < 24; ++i) data[i] = static_cast<float>(i);
  Tensor t(data.data(), DType::kF32, {4, 6});
  EXPECT_TRUE(t.is_contiguous());
  Tensor rows = t.slice_rows(1, 2);
  EXPECT_EQ(rows.data<float>()[0], 6.f);
  Tensor cols = t.slice_last(2, 4);
  EXPECT_FALSE(cols.is_contiguous());
  EXPECT_EQ(cols.stride(0), 6);
  Tensor heads = cols.split_heads(2);  // [4, 2, 2]
  EXPECT_EQ(heads.ndim(), 3);
  EXPECT_EQ(heads.stride(0), 6);
  EXPECT_EQ(heads.stride(1), 2);
  EXPECT_EQ(heads.data<float>()[1 * 6 + 1 * 2 + 1], 11.f);
  EXPECT_EQ(t.reshape({2, 12}).size(1), 12);
  EXPECT_DEATH(t.slice_rows(3, 2), "rows");
  EXPECT_DEATH(cols.reshape({16}), "non-contiguous");
  EXPECT_DEATH(t.data<int32_t>(), "tensor is f32");
}

TEST(Buffer, OwnsAndMoves) {
  Buffer a(cpu_allocator(), DType::kI32, {3, 5});
  EXPECT_EQ(a.nbytes(), 60u);
  a.data<int32_t>()[14] = 7;
  Buffer b = std::move(a);
  EXPECT_EQ(b.data<int32_t>()[14], 7);
  EXPECT_FALSE(a.tensor().defined());
}

TEST(DTypeAndDevice, Parse) {
  EXPECT_EQ(parse_dtype("bfloat16"), DType::kBF16);
  EXPECT_EQ(dtype_size(DType::kF8E4M3), 1u);
  EXPECT_FALSE(parse_dtype("int4"));
  EXPECT_EQ(parse_device("cuda:1")->index, 1);
  EXPECT_TRUE(parse_device("cpu")->is_cpu());
  EXPECT_FALSE(parse_device("cuda:x"));
  EXPECT_FALSE(parse_device("tpu"));
}

}  // namespace
}  // namespace sgl
