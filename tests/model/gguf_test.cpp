// Tests for the GGUF reader: every metadata type, v2/v3, tensor infos, alignment, and errors on
// corrupt files (bad magic, versions, truncation at every byte, bad offsets, huge counts).
#include "model/gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gguf_test_util.h"
#include "model_test_util.h"

namespace sgl::model {
namespace {

namespace fs = std::filesystem;

using test_util::expect_status;
using test_util::gguf_array;
using test_util::gguf_bool;
using test_util::gguf_f32;
using test_util::gguf_f32_array;
using test_util::gguf_f64;
using test_util::gguf_i16;
using test_util::gguf_i32;
using test_util::gguf_i32_array;
using test_util::gguf_i64;
using test_util::gguf_i8;
using test_util::gguf_str;
using test_util::gguf_string;
using test_util::gguf_string_array;
using test_util::gguf_u16;
using test_util::gguf_u32;
using test_util::gguf_u64;
using test_util::gguf_u8;
using test_util::GgufRawValue;
using test_util::GgufWriter;
using test_util::le_bytes;
using test_util::TempDir;

constexpr uint32_t kF32 = 0, kF16 = 1, kQ8_0 = 8, kQ6_K = 14;

std::string f32_bytes(const std::vector<float>& v) { return test_util::raw_bytes(v); }

Result<GgufFile> open_bytes(const TempDir& dir, const std::string& bytes,
                            const std::string& name = "m.gguf") {
  return GgufFile::open(dir.write(name, bytes));
}

// A small valid file: a few metadata types and two tensors (used for truncation too).
GgufWriter small_writer() {
  GgufWriter w;
  w.kv("general.architecture", gguf_string("llama"))
      .kv("a.count", gguf_u32(7))
      .kv("a.list", gguf_i32_array({1, -2, 3}))
      .tensor("t.a", {3, 2}, kF32, f32_bytes({1, 2, 3, 4, 5, 6}))
      .tensor("t.b", {2}, kF32, f32_bytes({7, 8}));
  return w;
}

// ---- metadata ----

TEST(GgufTest, EveryMetadataType) {
  TempDir dir;
  GgufWriter w;
  w.kv("u8", gguf_u8(250))
      .kv("i8", gguf_i8(-100))
      .kv("u16", gguf_u16(65000))
      .kv("i16", gguf_i16(-32000))
      .kv("u32", gguf_u32(4000000000u))
      .kv("i32", gguf_i32(-2000000000))
      .kv("f32", gguf_f32(1.5f))
      .kv("bool.t", gguf_bool(true))
      .kv("bool.f", gguf_bool(false))
      .kv("str", gguf_string("héllo"))
      .kv("empty.str", gguf_string(""))
      .kv("u64", gguf_u64(uint64_t{1} << 40))
      .kv("u64.huge", gguf_u64(std::numeric_limits<uint64_t>::max()))
      .kv("i64", gguf_i64(-(int64_t{1} << 50)))
      .kv("f64", gguf_f64(-0.25))
      .kv("arr.u8", gguf_array(0, {gguf_u8(1), gguf_u8(2)}))
      .kv("arr.i8", gguf_array(1, {gguf_i8(-1)}))
      .kv("arr.u16", gguf_array(2, {gguf_u16(3)}))
      .kv("arr.i16", gguf_array(3, {gguf_i16(-4)}))
      .kv("arr.u32", gguf_array(4, {gguf_u32(5)}))
      .kv("arr.i32", gguf_i32_array({6, -7}))
      .kv("arr.f32", gguf_f32_array({0.5f, -1.0f}))
      .kv("arr.bool", gguf_array(7, {gguf_bool(true), gguf_bool(false)}))
      .kv("arr.str", gguf_string_array({"a", "", "ccc"}))
      .kv("arr.u64", gguf_array(10, {gguf_u64(8)}))
      .kv("arr.i64", gguf_array(11, {gguf_i64(-9)}))
      .kv("arr.f64", gguf_array(12, {gguf_f64(2.5)}))
      .kv("arr.empty", gguf_array(8, {}))
      .kv("arr.nested", gguf_array(9, {gguf_i32_array({1, 2}), gguf_array(5, {})}))
      .kv("arr.nested.str",
          gguf_array(9, {gguf_string_array({"x"}), gguf_string_array({"y", "z"})}));
  Result<GgufFile> f = open_bytes(dir, w.bytes());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const GgufMetadata& m = f->metadata();
  EXPECT_EQ(m.size(), 30u);
  EXPECT_TRUE(f->tensors().empty());

  // Each value keeps its exact on-disk type.
  EXPECT_EQ(m.find("u8")->type(), GgufValueType::kUint8);
  EXPECT_EQ(std::get<uint8_t>(m.find("u8")->storage()), 250);
  EXPECT_EQ(std::get<int8_t>(m.find("i8")->storage()), -100);
  EXPECT_EQ(std::get<uint16_t>(m.find("u16")->storage()), 65000);
  EXPECT_EQ(std::get<int16_t>(m.find("i16")->storage()), -32000);
  EXPECT_EQ(std::get<uint32_t>(m.find("u32")->storage()), 4000000000u);
  EXPECT_EQ(std::get<int32_t>(m.find("i32")->storage()), -2000000000);
  EXPECT_EQ(m.find("f32")->type(), GgufValueType::kFloat32);
  EXPECT_EQ(m.find("str")->type(), GgufValueType::kString);
  EXPECT_EQ(m.find("u64")->type(), GgufValueType::kUint64);
  EXPECT_EQ(m.find("i64")->type(), GgufValueType::kInt64);
  EXPECT_EQ(m.find("f64")->type(), GgufValueType::kFloat64);
  EXPECT_EQ(m.find("arr.f32")->type_description(), "array[float32]");
  EXPECT_EQ(m.find("arr.nested")->type_description(), "array[array[int32]]");
  EXPECT_EQ(m.find("arr.empty")->type_description(), "array[string]");

  // Typed getters convert within a kind.
  EXPECT_EQ(*m.get_int("u8"), 250);
  EXPECT_EQ(*m.get_int("i8"), -100);
  EXPECT_EQ(*m.get_int("u16"), 65000);
  EXPECT_EQ(*m.get_int("i16"), -32000);
  EXPECT_EQ(*m.get_int("u32"), 4000000000);
  EXPECT_EQ(*m.get_int("i32"), -2000000000);
  EXPECT_EQ(*m.get_int("u64"), int64_t{1} << 40);
  EXPECT_EQ(*m.get_int("i64"), -(int64_t{1} << 50));
  EXPECT_EQ(*m.get_float("f32"), 1.5);
  EXPECT_EQ(*m.get_float("f64"), -0.25);
  EXPECT_EQ(*m.get_float("u32"), 4000000000.0);  // integers read as numbers too
  EXPECT_TRUE(*m.get_bool("bool.t"));
  EXPECT_FALSE(*m.get_bool("bool.f"));
  EXPECT_EQ(*m.get_string("str"), "héllo");
  EXPECT_EQ(*m.get_string("empty.str"), "");

  EXPECT_EQ(*m.get_int_array("arr.u8"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(*m.get_int_array("arr.i8"), (std::vector<int64_t>{-1}));
  EXPECT_EQ(*m.get_int_array("arr.u16"), (std::vector<int64_t>{3}));
  EXPECT_EQ(*m.get_int_array("arr.i16"), (std::vector<int64_t>{-4}));
  EXPECT_EQ(*m.get_int_array("arr.u32"), (std::vector<int64_t>{5}));
  EXPECT_EQ(*m.get_int_array("arr.i32"), (std::vector<int64_t>{6, -7}));
  EXPECT_EQ(*m.get_int_array("arr.u64"), (std::vector<int64_t>{8}));
  EXPECT_EQ(*m.get_int_array("arr.i64"), (std::vector<int64_t>{-9}));
  EXPECT_EQ(*m.get_float_array("arr.f32"), (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(*m.get_float_array("arr.f64"), (std::vector<double>{2.5}));
  EXPECT_EQ(*m.get_string_array("arr.str"), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_TRUE(m.get_string_array("arr.empty")->empty());
  EXPECT_EQ(*m.get_array_size("arr.str"), 3u);
  const GgufArray* bools = m.find("arr.bool")->as_array();
  ASSERT_NE(bools, nullptr);
  EXPECT_EQ(bools->element_type(), GgufValueType::kBool);
  EXPECT_EQ(bools->bool_at(0), true);
  EXPECT_EQ(bools->bool_at(1), false);
  EXPECT_EQ(bools->int_at(0), std::nullopt);  // a bool is not an integer

  const GgufArray* nested = m.find("arr.nested")->as_array();
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(nested->element_type(), GgufValueType::kArray);
  ASSERT_EQ(nested->size(), 2u);
  EXPECT_EQ(nested->array_at(0).int_at(1), 2);
  EXPECT_EQ(nested->array_at(1).element_type(), GgufValueType::kInt32);
  EXPECT_TRUE(nested->array_at(1).empty());
  const GgufArray* nested_str = m.find("arr.nested.str")->as_array();
  ASSERT_NE(nested_str, nullptr);
  EXPECT_EQ(nested_str->array_at(1).string_at(1), "z");
  EXPECT_EQ(nested_str->array_at(0).string_at(0), "x");
  EXPECT_EQ((*m.get_array("arr.u64"))->int_at(0), 8);
  EXPECT_EQ((*m.get_array("arr.f32"))->float_at(1), -1.0);
  EXPECT_EQ((*m.get_array("arr.str"))->string_at(1), "");

  // Fallback getters.
  EXPECT_EQ(*m.get_int_or("absent", 42), 42);
  EXPECT_EQ(*m.get_int_or("u8", 42), 250);
  EXPECT_EQ(*m.get_float_or("absent", 0.5), 0.5);
  EXPECT_EQ(*m.get_string_or("absent", "x"), "x");
  EXPECT_TRUE(*m.get_bool_or("absent", true));
}

TEST(GgufTest, MetadataGetterErrorsNameFileAndKey) {
  TempDir dir;
  GgufWriter w;
  w.kv("num", gguf_u32(3))
      .kv("text", gguf_string("x"))
      .kv("u64.huge", gguf_u64(std::numeric_limits<uint64_t>::max()))
      .kv("mixed", gguf_array(9, {gguf_i32_array({1})}))
      .kv("strs", gguf_string_array({"a"}));
  Result<GgufFile> f = open_bytes(dir, w.bytes(), "named.gguf");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const GgufMetadata& m = f->metadata();
  expect_status(m.get_string("absent").status(), StatusCode::kNotFound,
                {"named.gguf", "'absent'", "missing"});
  expect_status(m.get_string("num").status(), StatusCode::kDataLoss,
                {"named.gguf", "'num'", "uint32", "string"});
  expect_status(m.get_int("text").status(), StatusCode::kDataLoss, {"'text'", "string"});
  expect_status(m.get_int("u64.huge").status(), StatusCode::kDataLoss, {"'u64.huge'"});
  expect_status(m.get_bool("num").status(), StatusCode::kDataLoss, {"'num'", "bool"});
  expect_status(m.get_float("text").status(), StatusCode::kDataLoss, {"'text'"});
  expect_status(m.get_int_array("mixed").status(), StatusCode::kDataLoss,
                {"'mixed'", "array[array[int32]]"});
  expect_status(m.get_int_array("strs").status(), StatusCode::kDataLoss, {"'strs'"});
  expect_status(m.get_string_array("num").status(), StatusCode::kDataLoss, {"'num'"});
  expect_status(m.get_float_array("strs").status(), StatusCode::kDataLoss, {"'strs'"});
  expect_status(m.get_int_or("text", 1).status(), StatusCode::kDataLoss, {"'text'"});
}

TEST(GgufTest, Versions2And3) {
  TempDir dir;
  for (uint32_t version : {2u, 3u}) {
    SCOPED_TRACE(version);
    GgufWriter w(version);
    w.kv("general.name", gguf_string("v")).tensor("x", {4}, kF32, f32_bytes({1, 2, 3, 4}));
    Result<GgufFile> f = open_bytes(dir, w.bytes());
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->version(), version);
    EXPECT_EQ(*f->metadata().get_string("general.name"), "v");
    ASSERT_EQ(f->tensors().size(), 1u);
    float v[4];
    std::memcpy(v, f->tensors()[0].data, sizeof v);
    EXPECT_EQ(v[3], 4.0f);
  }
}

// ---- tensors ----

TEST(GgufTest, TensorInfosShapesAndData) {
  TempDir dir;
  std::string q8(34 * 2, '\0');  // Q8_0: 2 blocks of 32
  for (size_t i = 0; i < q8.size(); ++i) q8[i] = static_cast<char>(i);
  const std::string scalar = le_bytes<uint16_t>(0x3c00);  // f16 1.0
  GgufWriter w;
  w.kv("general.architecture", gguf_string("llama"))
      .tensor("mat", {3, 2}, kF32, f32_bytes({1, 2, 3, 4, 5, 6}))  // 2 rows of 3
      .tensor("q", {32, 2}, kQ8_0, q8)
      .tensor("s", {}, kF16, scalar)
      .tensor("cube", {1, 1, 2, 1}, kF32, f32_bytes({9, 10}))
      .tensor("empty", {0, 5}, kF32, "");
  const std::string bytes = w.bytes();
  Result<GgufFile> f = open_bytes(dir, bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->data_offset() % 32, 0u);
  EXPECT_GE(f->data_offset(), w.header_size());
  EXPECT_LT(f->data_offset(), w.header_size() + 32);
  ASSERT_EQ(f->tensors().size(), 5u);

  const GgufTensorInfo* mat = f->find_tensor("mat");
  ASSERT_NE(mat, nullptr);
  EXPECT_EQ(mat->shape, (std::vector<int64_t>{2, 3}));  // GGUF dims reversed
  EXPECT_EQ(mat->type, GgmlType::kF32);
  EXPECT_EQ(mat->offset, 0u);
  EXPECT_EQ(mat->nbytes, 24u);
  EXPECT_EQ(mat->data, nullptr == mat->data ? nullptr : mat->data);
  EXPECT_EQ(std::memcmp(mat->data, bytes.data() + f->data_offset(), 24), 0);

  const GgufTensorInfo* q = f->find_tensor("q");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->shape, (std::vector<int64_t>{2, 32}));
  EXPECT_EQ(q->type, GgmlType::kQ8_0);
  EXPECT_EQ(q->offset, 32u);  // 24 bytes, padded to 32
  EXPECT_EQ(q->nbytes, 68u);
  EXPECT_EQ(q->numel(), 64);
  EXPECT_EQ(std::memcmp(q->data, q8.data(), q8.size()), 0);

  const GgufTensorInfo* s = f->find_tensor("s");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->numel(), 1);
  EXPECT_EQ(s->nbytes, 2u);

  EXPECT_EQ(f->find_tensor("cube")->shape, (std::vector<int64_t>{1, 2, 1, 1}));
  EXPECT_EQ(f->find_tensor("empty")->shape, (std::vector<int64_t>{5, 0}));
  EXPECT_EQ(f->find_tensor("empty")->nbytes, 0u);
  EXPECT_EQ(f->find_tensor("absent"), nullptr);
  EXPECT_EQ(f->tensors()[1].name, "q");  // file order kept

  // Moving the file keeps data pointers valid.
  const uint8_t* before = q->data;
  GgufFile moved = std::move(f).value();
  EXPECT_EQ(moved.find_tensor("q")->data, before);
}

TEST(GgufTest, CustomAlignment) {
  TempDir dir;
  for (uint32_t align : {1u, 8u, 64u, 4096u}) {
    SCOPED_TRACE(align);
    GgufWriter w;
    w.alignment(align)
        .kv("general.alignment", gguf_u32(align))
        .tensor("a", {3}, kF32, f32_bytes({1, 2, 3}))
        .tensor("b", {2}, kF32, f32_bytes({4, 5}));
    Result<GgufFile> f = open_bytes(dir, w.bytes());
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->alignment(), align);
    EXPECT_EQ(f->data_offset() % align, 0u);
    const GgufTensorInfo* b = f->find_tensor("b");
    EXPECT_EQ(b->offset, align >= 12 ? align : (12 + align - 1) / align * align);
    float v[2];
    std::memcpy(v, b->data, sizeof v);
    EXPECT_EQ(v[0], 4.0f);
    EXPECT_EQ(v[1], 5.0f);
  }
}

TEST(GgufTest, BadAlignment) {
  TempDir dir;
  for (uint32_t align : {0u, 3u, 48u}) {
    GgufWriter w;
    w.kv("general.alignment", gguf_u32(align));
    expect_status(open_bytes(dir, w.bytes()).status(), StatusCode::kDataLoss,
                  {"general.alignment", std::to_string(align), "power of two"});
  }
  GgufWriter w;
  w.kv("general.alignment", gguf_u64(32));
  expect_status(open_bytes(dir, w.bytes()).status(), StatusCode::kDataLoss,
                {"general.alignment", "uint64", "uint32"});
}

// ---- corrupt files ----

TEST(GgufErrorTest, BadMagicAndVersions) {
  TempDir dir;
  std::string bytes = small_writer().bytes();
  std::string bad = bytes;
  bad[0] = 'X';
  bad[3] = '\x01';
  expect_status(open_bytes(dir, bad, "bad.gguf").status(), StatusCode::kDataLoss,
                {"bad.gguf", "not a GGUF file", "XGU\\x01"});
  expect_status(open_bytes(dir, "").status(), StatusCode::kDataLoss, {"not a GGUF file"});
  expect_status(open_bytes(dir, "GG").status(), StatusCode::kDataLoss, {"not a GGUF file"});

  for (uint32_t version : {0u, 1u, 4u, 99u}) {
    std::string v = bytes;
    std::memcpy(v.data() + 4, &version, 4);
    expect_status(open_bytes(dir, v).status(), StatusCode::kUnimplemented,
                  {"GGUF version " + std::to_string(version), "supported: 2, 3"});
  }
  std::string big_endian = bytes;
  const uint32_t swapped = 0x03000000u;
  std::memcpy(big_endian.data() + 4, &swapped, 4);
  expect_status(open_bytes(dir, big_endian).status(), StatusCode::kUnimplemented, {"big-endian"});
}

TEST(GgufErrorTest, TruncationAtEveryByteFails) {
  TempDir dir;
  const std::string bytes = small_writer().bytes();
  ASSERT_TRUE(open_bytes(dir, bytes).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    Result<GgufFile> f = open_bytes(dir, bytes.substr(0, n));
    ASSERT_FALSE(f.ok()) << "a prefix of " << n << " of " << bytes.size() << " bytes opened";
    EXPECT_EQ(f.status().code(), StatusCode::kDataLoss) << n << ": " << f.status().to_string();
    EXPECT_NE(f.status().message().find("m.gguf"), std::string::npos) << f.status().message();
  }
}

// Random byte corruption (seeded) of a file with every kind of field: opening either succeeds
// or returns an error; it never crashes, hangs or allocates absurdly (run under ASan in CI).
TEST(GgufErrorTest, RandomCorruptionNeverCrashes) {
  TempDir dir;
  GgufWriter w = small_writer();
  w.kv("nested", gguf_array(9, {gguf_string_array({"a", "bc"}), gguf_array(8, {})}))
      .kv("f", gguf_f64(2.0))
      .tensor("q", {32}, kQ8_0, std::string(34, '\x11'));
  const std::string bytes = w.bytes();
  std::mt19937 rng(1234);
  int opened = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string corrupt = bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) {
      const size_t at = 8 + rng() % (w.header_size() - 8);  // keep magic + version
      corrupt[at] = static_cast<char>(rng() % 4 == 0 ? 0xff : rng());
    }
    Result<GgufFile> f = open_bytes(dir, corrupt);
    if (f.ok()) {
      ++opened;
      for (const GgufTensorInfo& t : f->tensors()) {
        ASSERT_LE(f->data_offset() + t.offset + t.nbytes, corrupt.size()) << t.name;
      }
    }
  }
  EXPECT_LT(opened, 400);
}

TEST(GgufErrorTest, TensorOffsetsOutOfRangeOrMisaligned) {
  TempDir dir;
  GgufWriter past;
  past.tensor("a", {4}, kF32, f32_bytes({1, 2, 3, 4}), /*offset_override=*/64);
  expect_status(open_bytes(dir, past.bytes()).status(), StatusCode::kDataLoss,
                {"tensor 'a'", "runs past the end"});
  GgufWriter huge;
  huge.tensor("a", {4}, kF32, f32_bytes({1, 2, 3, 4}), /*offset_override=*/~uint64_t{31});
  expect_status(open_bytes(dir, huge.bytes()).status(), StatusCode::kDataLoss,
                {"tensor 'a'", "runs past the end"});
  GgufWriter misaligned;
  misaligned.tensor("a", {4}, kF32, f32_bytes({1, 2, 3, 4}), /*offset_override=*/4);
  expect_status(open_bytes(dir, misaligned.bytes()).status(), StatusCode::kDataLoss,
                {"tensor 'a'", "offset 4", "alignment 32"});
}

TEST(GgufErrorTest, BadTensorInfos) {
  TempDir dir;
  for (uint32_t type : {4u, 31u, 1000u}) {
    GgufWriter w;
    w.tensor("weird", {4}, type, std::string(16, '\0'));
    expect_status(open_bytes(dir, w.bytes()).status(), StatusCode::kUnimplemented,
                  {"tensor 'weird'", "unknown ggml type id " + std::to_string(type)});
  }
  GgufWriter dims5;
  dims5.tensor("five", {1, 1, 1, 1, 1}, kF32, f32_bytes({1}));
  expect_status(open_bytes(dir, dims5.bytes()).status(), StatusCode::kDataLoss,
                {"tensor 'five'", "5 dims"});
  GgufWriter partial_block;
  partial_block.tensor("q", {33}, kQ8_0, std::string(68, '\0'));
  expect_status(open_bytes(dir, partial_block.bytes()).status(), StatusCode::kDataLoss,
                {"tensor 'q'", "Q8_0", "block size 32"});
  GgufWriter k_block;
  k_block.tensor("k", {128}, kQ6_K, std::string(210, '\0'));
  expect_status(open_bytes(dir, k_block.bytes()).status(), StatusCode::kDataLoss,
                {"tensor 'k'", "Q6_K", "256"});
  GgufWriter overflow;
  overflow.tensor("big", {uint64_t{1} << 40, uint64_t{1} << 40}, kF32, "");
  expect_status(open_bytes(dir, overflow.bytes()).status(), StatusCode::kDataLoss,
                {"tensor 'big'", "overflow"});
  GgufWriter negative;
  negative.tensor("neg", {~uint64_t{0}}, kF32, "");
  expect_status(open_bytes(dir, negative.bytes()).status(), StatusCode::kDataLoss,
                {"tensor 'neg'", "overflow"});
  GgufWriter dup;
  dup.tensor("same", {1}, kF32, f32_bytes({1})).tensor("same", {1}, kF32, f32_bytes({2}));
  expect_status(open_bytes(dir, dup.bytes()).status(), StatusCode::kDataLoss,
                {"duplicate tensor name 'same'"});
}

TEST(GgufErrorTest, HugeCountsAreRefusedBeforeAllocating) {
  TempDir dir;
  // An array claiming 2^60 int32 items in a tiny file.
  GgufWriter arr;
  arr.kv("tokens", {9, le_bytes<uint32_t>(5) + le_bytes<uint64_t>(uint64_t{1} << 60)});
  expect_status(open_bytes(dir, arr.bytes()).status(), StatusCode::kDataLoss,
                {"'tokens'", "cannot fit"});
  GgufWriter strs;
  strs.kv("merges", {9, le_bytes<uint32_t>(8) + le_bytes<uint64_t>(~uint64_t{0})});
  expect_status(open_bytes(dir, strs.bytes()).status(), StatusCode::kDataLoss,
                {"'merges'", "cannot fit"});
  GgufWriter str;
  str.kv("name", {8, le_bytes<uint64_t>(uint64_t{1} << 62) + "abc"});
  expect_status(open_bytes(dir, str.bytes()).status(), StatusCode::kDataLoss,
                {"'name'", "length 4611686018427387904"});
  // Tensor and metadata counts.
  std::string header = "GGUF" + le_bytes<uint32_t>(3) + le_bytes<uint64_t>(uint64_t{1} << 58) +
                       le_bytes<uint64_t>(0) + std::string(64, '\0');
  expect_status(open_bytes(dir, header).status(), StatusCode::kDataLoss,
                {"tensor count", "cannot fit"});
  header = "GGUF" + le_bytes<uint32_t>(3) + le_bytes<uint64_t>(0) +
           le_bytes<uint64_t>(~uint64_t{0}) + std::string(64, '\0');
  expect_status(open_bytes(dir, header).status(), StatusCode::kDataLoss,
                {"metadata count", "cannot fit"});
  // A huge key length.
  header = "GGUF" + le_bytes<uint32_t>(3) + le_bytes<uint64_t>(0) + le_bytes<uint64_t>(1) +
           le_bytes<uint64_t>(uint64_t{1} << 50) + std::string(64, '\0');
  expect_status(open_bytes(dir, header).status(), StatusCode::kDataLoss,
                {"metadata key #0", "length"});
}

// Metadata arrays are stored packed: memory stays at about their bytes in the file (each item
// used to become a ~40-byte variant, so a 600 MB array took 24 GB).
TEST(GgufTest, LargeArraysArePacked) {
  TempDir dir;
  constexpr uint64_t kStrings = 2000000;
  std::string strings = le_bytes<uint32_t>(8) + le_bytes<uint64_t>(kStrings);
  uint64_t chars = 0;
  for (uint64_t i = 0; i < kStrings; ++i) {
    const std::string token = "t" + std::to_string(i % 100000);
    strings += le_bytes<uint64_t>(token.size()) + token;
    chars += token.size();
  }
  constexpr uint64_t kBytes = 8 << 20;
  const std::string u8s =
      le_bytes<uint32_t>(0) + le_bytes<uint64_t>(kBytes) + std::string(kBytes, '\x07');
  GgufWriter w;
  w.kv("tokenizer.ggml.tokens", {9, strings}).kv("blob", {9, u8s});
  Result<GgufFile> f = open_bytes(dir, w.bytes());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const GgufMetadata& m = f->metadata();
  const GgufArray& tokens = **m.get_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), kStrings);
  EXPECT_EQ(tokens.string_at(0), "t0");
  EXPECT_EQ(tokens.string_at(1234567), "t34567");
  EXPECT_EQ(tokens.string_at(kStrings - 1), "t99999");
  // The characters plus one 8-byte offset each: exactly the array's bytes in the file.
  EXPECT_EQ(tokens.memory_bytes(), chars + 8 * kStrings);
  EXPECT_EQ(tokens.memory_bytes(), strings.size() - 12);
  const GgufArray& blob = **m.get_array("blob");
  EXPECT_EQ(blob.memory_bytes(), kBytes);
  EXPECT_EQ(blob.int_at(kBytes - 1), 7);
  // The whole metadata: the arrays plus bookkeeping for two keys.
  EXPECT_LE(m.memory_bytes(), tokens.memory_bytes() + blob.memory_bytes() + 1024);
  EXPECT_EQ((*m.get_string_array("tokenizer.ggml.tokens"))[99999], "t99999");
}

// The parsed header's memory is budgeted (GgufReadOptions::max_header_bytes, 512 MiB by
// default) and a file that would exceed it is refused before the allocation.
TEST(GgufErrorTest, HeaderMemoryIsBudgeted) {
  TempDir dir;
  const fs::path path = dir.write(
      "big.gguf", GgufWriter()
                      .kv("general.architecture", gguf_string("llama"))
                      .kv("tokenizer.ggml.tokens",
                          gguf_string_array(std::vector<std::string>(200, std::string(20, 'x'))))
                      .bytes());
  ASSERT_TRUE(GgufFile::open(path).ok());
  expect_status(GgufFile::open(path, {.max_header_bytes = 4096}).status(),
                StatusCode::kResourceExhausted,
                {"big.gguf", "4096 bytes limit", "metadata key 'tokenizer.ggml.tokens'"});
  GgufWriter scalars;
  scalars.kv("blob",
             {9, le_bytes<uint32_t>(0) + le_bytes<uint64_t>(5000) + std::string(5000, 'a')});
  expect_status(
      GgufFile::open(dir.write("blob.gguf", scalars.bytes()), {.max_header_bytes = 4096}).status(),
      StatusCode::kResourceExhausted, {"'blob'", "limit"});
  GgufWriter nested;
  std::vector<GgufRawValue> empties(300, gguf_array(0, {}));
  nested.kv("nested", gguf_array(9, empties));
  expect_status(
      GgufFile::open(dir.write("nested.gguf", nested.bytes()), {.max_header_bytes = 4096}).status(),
      StatusCode::kResourceExhausted, {"'nested'", "limit"});
  GgufWriter tensors;
  for (int i = 0; i < 100; ++i) tensors.tensor("t" + std::to_string(i), {1}, kF32, f32_bytes({1}));
  expect_status(
      GgufFile::open(dir.write("tensors.gguf", tensors.bytes()), {.max_header_bytes = 4096})
          .status(),
      StatusCode::kResourceExhausted, {"tensor count", "limit"});
}

// Declared sizes are checked against the bytes left before anything is sized from them.
TEST(GgufErrorTest, HugeDeclaredArraysFailFast) {
  TempDir dir;
  GgufWriter huge;
  huge.kv("blob", {9, le_bytes<uint32_t>(0) + le_bytes<uint64_t>(uint64_t{1} << 40)});
  expect_status(open_bytes(dir, huge.bytes()).status(), StatusCode::kDataLoss,
                {"'blob'", "array of 1099511627776 uint8 items cannot fit"});
  // More items than the file has bytes for, and a string longer than the file.
  GgufWriter over;
  over.kv("ids", {9, le_bytes<uint32_t>(5) + le_bytes<uint64_t>(1000) + std::string(64, '\0')});
  expect_status(open_bytes(dir, over.bytes()).status(), StatusCode::kDataLoss,
                {"'ids'", "array of 1000 int32 items cannot fit"});
  GgufWriter long_item;
  long_item.kv("toks", {9, le_bytes<uint32_t>(8) + le_bytes<uint64_t>(2) + gguf_str("ab") +
                               le_bytes<uint64_t>(uint64_t{1} << 40) + "cd"});
  expect_status(open_bytes(dir, long_item.bytes()).status(), StatusCode::kDataLoss,
                {"truncated GGUF file", "'toks'[1] has length 1099511627776"});
}

TEST(GgufTest, FromBytesMatchesOpen) {
  TempDir dir;
  const std::string bytes = small_writer().bytes();
  const std::vector<uint8_t> buffer(bytes.begin(), bytes.end());
  Result<GgufFile> mem = GgufFile::from_bytes(buffer, "in-memory");
  ASSERT_TRUE(mem.ok()) << mem.status().to_string();
  Result<GgufFile> file = open_bytes(dir, bytes);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(mem->path(), "in-memory");
  EXPECT_EQ(mem->metadata().size(), file->metadata().size());
  ASSERT_EQ(mem->tensors().size(), 2u);
  const GgufTensorInfo* a = mem->find_tensor("t.a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->data, buffer.data() + mem->data_offset() + a->offset);
  EXPECT_EQ(std::memcmp(a->data, file->find_tensor("t.a")->data, a->nbytes), 0);
  expect_status(GgufFile::from_bytes(std::span(buffer).first(40), "cut").status(),
                StatusCode::kDataLoss, {"truncated GGUF file cut"});
}

TEST(GgufErrorTest, BadMetadata) {
  TempDir dir;
  GgufWriter unknown;
  unknown.kv("k", {13, "x"});
  expect_status(open_bytes(dir, unknown.bytes()).status(), StatusCode::kDataLoss,
                {"'k'", "unknown value type 13"});
  GgufWriter unknown_elem;
  unknown_elem.kv("k", {9, le_bytes<uint32_t>(77) + le_bytes<uint64_t>(0)});
  expect_status(open_bytes(dir, unknown_elem.bytes()).status(), StatusCode::kDataLoss,
                {"'k'", "unknown array element type 77"});
  GgufWriter dup;
  dup.kv("k", gguf_u8(1)).kv("k", gguf_u8(2));
  expect_status(open_bytes(dir, dup.bytes()).status(), StatusCode::kDataLoss,
                {"duplicate metadata key 'k'"});
  // Arrays nested 9 deep: refused (bounded recursion).
  GgufRawValue deep = gguf_array(0, {});
  for (int i = 0; i < 8; ++i) deep = gguf_array(9, {deep});
  GgufWriter nested;
  nested.kv("deep", deep);
  expect_status(open_bytes(dir, nested.bytes()).status(), StatusCode::kDataLoss,
                {"'deep'", "nested deeper"});
}

TEST(GgufErrorTest, MissingFileAndDirectory) {
  TempDir dir;
  expect_status(GgufFile::open(dir.path() / "absent.gguf").status(), StatusCode::kNotFound,
                {"no such file or directory: " + (dir.path() / "absent.gguf").string()});
  expect_status(GgufFile::open(dir.path()).status(), StatusCode::kInvalidArgument,
                {"not a regular file: " + dir.path().string()});
}

TEST(GgufTest, IsGgufFile) {
  TempDir dir;
  EXPECT_TRUE(is_gguf_file(dir.write("a.gguf", small_writer().bytes())));
  EXPECT_TRUE(is_gguf_file(dir.write("no_extension", small_writer().bytes())));
  EXPECT_FALSE(is_gguf_file(dir.write("b.gguf", "GGU")));
  EXPECT_FALSE(is_gguf_file(dir.write("c.gguf", "{\"json\": 1}")));
  EXPECT_FALSE(is_gguf_file(dir.path()));
  EXPECT_FALSE(is_gguf_file(dir.path() / "absent"));
}

TEST(GgmlTypeTest, Traits) {
  EXPECT_EQ(ggml_type_traits(0)->name, "F32");
  EXPECT_EQ(ggml_type_traits(3)->type_size, 20);
  EXPECT_EQ(ggml_type_traits(8)->type_size, 34);
  EXPECT_EQ(ggml_type_traits(12)->type_size, 144);
  EXPECT_EQ(ggml_type_traits(13)->type_size, 176);
  EXPECT_EQ(ggml_type_traits(14)->type_size, 210);
  EXPECT_EQ(ggml_type_traits(10)->type_size, 84);
  EXPECT_EQ(ggml_type_traits(11)->type_size, 110);
  EXPECT_EQ(ggml_type_traits(14)->block_size, 256);
  EXPECT_EQ(ggml_type_traits(30)->name, "BF16");
  EXPECT_FALSE(ggml_type_traits(4));
  EXPECT_FALSE(ggml_type_traits(40));
  EXPECT_EQ(ggml_type_name(GgmlType::kQ4_1), "Q4_1");
  EXPECT_EQ(ggml_type_name(static_cast<GgmlType>(77)), "type 77");
}

}  // namespace
}  // namespace sgl::model
