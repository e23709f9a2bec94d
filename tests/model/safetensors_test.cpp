// Tests for the safetensors reader: the test models, synthetic and sharded files, loader errors.
#include "model/safetensors.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "model/weight_source.h"
#include "model_test_util.h"

namespace sgl::model {
namespace {

using test_util::build_safetensors;
using test_util::expect_status;
using test_util::raw_bytes;
using test_util::safetensors_bytes;
using test_util::SyntheticTensor;
using test_util::TempDir;
using test_util::testdata_models_dir;

std::unique_ptr<Checkpoint> open_model(const std::string& model) {
  Result<std::unique_ptr<Checkpoint>> r = Checkpoint::open(testdata_models_dir() / model);
  EXPECT_TRUE(r.ok()) << model << ": " << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

void expect_tensor(const Checkpoint& ckpt, const std::string& name, DType dtype,
                   const std::vector<int64_t>& shape) {
  SCOPED_TRACE(name);
  const TensorInfo* t = ckpt.find(name);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->name, name);
  EXPECT_EQ(t->dtype, dtype);
  EXPECT_EQ(t->shape, shape);
  EXPECT_EQ(t->nbytes, static_cast<size_t>(t->numel()) * dtype_size(dtype));
  EXPECT_NE(t->data, nullptr);
}

template <typename T>
std::vector<T> values_of(const TensorInfo& t) {
  std::vector<T> out(t.nbytes / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), t.data, t.nbytes);
  return out;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// ---- the test models ----

TEST(SafetensorsTest, Stories260K) {
  auto ckpt = open_model("stories260K");
  ASSERT_NE(ckpt, nullptr);
  EXPECT_EQ(ckpt->names().size(), 47u);  // embed + 5 layers x 9 + norm; tied: no lm_head
  EXPECT_EQ(ckpt->find("lm_head.weight"), nullptr);
  expect_tensor(*ckpt, "model.embed_tokens.weight", DType::kF32, {512, 64});
  expect_tensor(*ckpt, "model.layers.0.self_attn.q_proj.weight", DType::kF32, {64, 64});
  expect_tensor(*ckpt, "model.layers.4.self_attn.k_proj.weight", DType::kF32, {32, 64});
  expect_tensor(*ckpt, "model.layers.2.mlp.down_proj.weight", DType::kF32, {64, 172});
  expect_tensor(*ckpt, "model.norm.weight", DType::kF32, {64});
  // A value read independently (Python struct over the raw file).
  std::vector<float> norm = values_of<float>(*ckpt->find("model.norm.weight"));
  EXPECT_FLOAT_EQ(norm[0], 2.4583089351654053f);
}

TEST(SafetensorsTest, MappedBytesMatchTheFile) {
  const auto path = testdata_models_dir() / "tiny-llama" / "model.safetensors";
  Result<SafetensorsFile> f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->metadata().at("format"), "pt");
  const std::string bytes = read_file(path);
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  const TensorInfo& k = f->tensors().at("model.layers.1.self_attn.k_proj.weight");
  EXPECT_EQ(k.file, path.string());
  // From the header: data_offsets [1004544, 1020928].
  ASSERT_EQ(k.nbytes, 1020928u - 1004544u);
  EXPECT_EQ(std::memcmp(k.data, bytes.data() + 8 + header_len + 1004544, k.nbytes), 0);
}

TEST(SafetensorsTest, TinyModels) {
  auto llama = open_model("tiny-llama");
  ASSERT_NE(llama, nullptr);
  expect_tensor(*llama, "lm_head.weight", DType::kBF16, {1000, 128});
  expect_tensor(*llama, "model.layers.0.self_attn.k_proj.weight", DType::kBF16, {64, 128});

  auto tied = open_model("tiny-llama-tied");
  ASSERT_NE(tied, nullptr);
  EXPECT_EQ(tied->find("lm_head.weight"), nullptr);
  expect_tensor(*tied, "model.layers.1.self_attn.v_proj.weight", DType::kBF16, {128, 128});

  auto qwen2 = open_model("tiny-qwen2");
  ASSERT_NE(qwen2, nullptr);
  expect_tensor(*qwen2, "model.layers.0.self_attn.q_proj.bias", DType::kBF16, {128});
  expect_tensor(*qwen2, "model.layers.1.self_attn.k_proj.bias", DType::kBF16, {64});

  auto qwen3 = open_model("tiny-qwen3");
  ASSERT_NE(qwen3, nullptr);
  expect_tensor(*qwen3, "model.layers.0.self_attn.q_norm.weight", DType::kBF16, {48});
  expect_tensor(*qwen3, "model.layers.0.self_attn.q_proj.weight", DType::kBF16, {192, 128});
  expect_tensor(*qwen3, "model.layers.1.self_attn.o_proj.weight", DType::kBF16, {128, 192});

  auto mixtral = open_model("tiny-mixtral");
  ASSERT_NE(mixtral, nullptr);
  expect_tensor(*mixtral, "model.layers.1.block_sparse_moe.experts.7.w1.weight", DType::kBF16,
                {256, 128});
  expect_tensor(*mixtral, "model.layers.0.block_sparse_moe.gate.weight", DType::kBF16, {8, 128});

  auto qwen2_moe = open_model("tiny-qwen2-moe");
  ASSERT_NE(qwen2_moe, nullptr);
  expect_tensor(*qwen2_moe, "model.layers.0.mlp.experts.3.down_proj.weight", DType::kBF16,
                {128, 64});

  auto qwen3_moe = open_model("tiny-qwen3-moe");
  ASSERT_NE(qwen3_moe, nullptr);
  expect_tensor(*qwen3_moe, "model.layers.1.mlp.gate.weight", DType::kBF16, {8, 128});
}

TEST(SafetensorsTest, EveryTestModelOpens) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(testdata_models_dir())) {
    if (!std::filesystem::exists(entry.path() / "model.safetensors")) continue;
    SCOPED_TRACE(entry.path().string());
    ++count;
    Result<std::unique_ptr<Checkpoint>> r = Checkpoint::open(entry.path());
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const Checkpoint& ckpt = **r;
    ASSERT_FALSE(ckpt.names().empty());
    for (const std::string& name : ckpt.names()) {
      const TensorInfo* t = ckpt.find(name);
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->nbytes, static_cast<size_t>(t->numel()) * dtype_size(t->dtype));
    }
    expect_tensor(ckpt, "model.norm.weight", r.value()->find("model.norm.weight")->dtype,
                  {r.value()->find("model.embed_tokens.weight")->shape[1]});
  }
  EXPECT_GE(count, 8);
}

// ---- synthetic files ----

TEST(SafetensorsTest, SyntheticDtypesAndValues) {
  TempDir dir;
  const std::vector<float> f32 = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
  const std::vector<uint16_t> bf16 = {0x3f80, 0xc000, 0x4040, 0x0000};
  const std::vector<uint16_t> f16 = {0x3c00, 0xc000};
  const std::vector<int32_t> i32 = {-1, 2, 3};
  const std::vector<int64_t> i64 = {int64_t{1} << 40};
  const auto path =
      dir.write("model.safetensors",
                build_safetensors({{"a.f32", "F32", {2, 3}, raw_bytes(f32)},
                                   {"b.bf16", "BF16", {4}, raw_bytes(bf16)},
                                   {"c.f16", "F16", {1, 2}, raw_bytes(f16)},
                                   {"d.i32", "I32", {3}, raw_bytes(i32)},
                                   {"e.i64", "I64", {}, raw_bytes(i64)},  // a scalar: numel 1
                                   {"f.empty", "F32", {0, 4}, ""}},
                                  R"({"format":"pt","note":"synthetic"})"));
  Result<SafetensorsFile> r = SafetensorsFile::open(path);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const auto& t = r->tensors();
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(r->metadata().at("note"), "synthetic");
  EXPECT_EQ(t.at("a.f32").dtype, DType::kF32);
  EXPECT_EQ(t.at("a.f32").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values_of<float>(t.at("a.f32")), f32);
  EXPECT_EQ(t.at("b.bf16").dtype, DType::kBF16);
  EXPECT_EQ(values_of<uint16_t>(t.at("b.bf16")), bf16);
  EXPECT_EQ(t.at("c.f16").dtype, DType::kF16);
  EXPECT_EQ(values_of<uint16_t>(t.at("c.f16")), f16);
  EXPECT_EQ(values_of<int32_t>(t.at("d.i32")), i32);
  EXPECT_EQ(t.at("e.i64").dtype, DType::kI64);
  EXPECT_TRUE(t.at("e.i64").shape.empty());
  EXPECT_EQ(values_of<int64_t>(t.at("e.i64")), i64);
  EXPECT_EQ(t.at("f.empty").nbytes, 0u);
  EXPECT_EQ(t.at("f.empty").numel(), 0);

  // Moving the file keeps the tensor pointers valid (the mapping does not move).
  const uint8_t* before = t.at("a.f32").data;
  SafetensorsFile moved = std::move(r).value();
  EXPECT_EQ(moved.tensors().at("a.f32").data, before);
  EXPECT_EQ(values_of<float>(moved.tensors().at("a.f32")), f32);
}

TEST(SafetensorsTest, ShardedCheckpoint) {
  TempDir dir;
  const std::vector<float> a = {1, 2, 3, 4};
  const std::vector<float> b = {5, 6};
  const std::vector<uint16_t> c = {0x3f80, 0x4000, 0x4040};
  dir.write("model-00001-of-00002.safetensors",
            build_safetensors(
                {{"model.a", "F32", {2, 2}, raw_bytes(a)}, {"model.b", "F32", {2}, raw_bytes(b)}},
                R"({"format":"pt"})"));
  dir.write("model-00002-of-00002.safetensors",
            build_safetensors({{"model.c", "BF16", {3}, raw_bytes(c)}}));
  dir.write("model.safetensors.index.json", R"({
    "metadata": {"total_size": 30},
    "weight_map": {
      "model.a": "model-00001-of-00002.safetensors",
      "model.b": "model-00001-of-00002.safetensors",
      "model.c": "model-00002-of-00002.safetensors"
    }})");
  Result<std::unique_ptr<Checkpoint>> r = Checkpoint::open(dir.path());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const Checkpoint& ckpt = **r;
  EXPECT_EQ(ckpt.names(), (std::vector<std::string>{"model.a", "model.b", "model.c"}));
  EXPECT_EQ(values_of<float>(*ckpt.find("model.a")), a);
  EXPECT_EQ(values_of<float>(*ckpt.find("model.b")), b);
  EXPECT_EQ(values_of<uint16_t>(*ckpt.find("model.c")), c);
  EXPECT_EQ(ckpt.find("model.c")->shape, (std::vector<int64_t>{3}));
  EXPECT_NE(ckpt.find("model.a")->file.find("model-00001-of-00002"), std::string::npos);
  EXPECT_NE(ckpt.find("model.c")->file.find("model-00002-of-00002"), std::string::npos);
  EXPECT_EQ(ckpt.find("model.missing"), nullptr);
}

// ---- loader errors: each a Status naming the file (and tensor), never a crash ----

// A valid two-tensor header over 24 data bytes, for corrupting one piece at a time.
const std::string kData(24, '\x01');

Status open_status(const TempDir& dir, const std::string& bytes) {
  auto path = dir.write("bad.safetensors", bytes);
  return SafetensorsFile::open(path).status();
}

TEST(SafetensorsErrorTest, TruncatedBelowEightBytes) {
  TempDir dir;
  expect_status(open_status(dir, std::string("\x10\x00\x00", 3)), StatusCode::kDataLoss,
                {"bad.safetensors", "3 bytes"});
  expect_status(open_status(dir, ""), StatusCode::kDataLoss, {"bad.safetensors"});
}

TEST(SafetensorsErrorTest, HeaderLengthBeyondFile) {
  TempDir dir;
  const std::string header = R"({"w":{"dtype":"F32","shape":[6],"data_offsets":[0,24]}})";
  expect_status(open_status(dir, safetensors_bytes(header, kData, 1000)), StatusCode::kDataLoss,
                {"bad.safetensors", "header length 1000"});
  expect_status(open_status(dir, safetensors_bytes(header, kData, UINT64_MAX - 1)),
                StatusCode::kDataLoss, {"bad.safetensors", "header length"});
}

TEST(SafetensorsErrorTest, CorruptJsonHeader) {
  TempDir dir;
  expect_status(open_status(dir, safetensors_bytes(R"({"w":{"dtype":"F32",)", kData)),
                StatusCode::kDataLoss, {"bad.safetensors", "JSON"});
  expect_status(open_status(dir, safetensors_bytes("[1,2,3]", kData)), StatusCode::kDataLoss,
                {"bad.safetensors", "object"});
  expect_status(open_status(dir, safetensors_bytes(R"({"w":[1,2]})", kData)), StatusCode::kDataLoss,
                {"bad.safetensors", "'w'"});
}

TEST(SafetensorsErrorTest, OffsetsOutOfRange) {
  TempDir dir;
  expect_status(
      open_status(dir,
                  safetensors_bytes(
                      R"({"w.beyond":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}})", kData)),
      StatusCode::kDataLoss,
      {"truncated safetensors file", "bad.safetensors", "'w.beyond'", "data section"});
  expect_status(
      open_status(dir,
                  safetensors_bytes(
                      R"({"w.reversed":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", kData)),
      StatusCode::kDataLoss, {"bad.safetensors", "w.reversed"});
  expect_status(
      open_status(
          dir, safetensors_bytes(
                   R"({"w.negative":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", kData)),
      StatusCode::kDataLoss, {"bad.safetensors", "w.negative"});
  expect_status(
      open_status(dir,
                  safetensors_bytes(
                      R"({"w.three":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", kData)),
      StatusCode::kDataLoss, {"bad.safetensors", "w.three", "data_offsets"});
}

// Two tensors sharing bytes are refused (each would read the other's values); touching and
// empty ones are fine.
TEST(SafetensorsErrorTest, OverlappingTensors) {
  TempDir dir;
  expect_status(
      open_status(dir,
                  safetensors_bytes(R"({"w.a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},
          "w.b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                                    kData)),
      StatusCode::kDataLoss, {"bad.safetensors", "'w.a' [0, 16)", "'w.b' [8, 16)", "overlap"});
  expect_status(
      open_status(dir, safetensors_bytes(R"({"w.a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
          "w.same":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                         kData)),
      StatusCode::kDataLoss, {"overlap"});
  EXPECT_TRUE(open_status(dir, safetensors_bytes(
                                   R"({"w.a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
          "w.b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]},
          "w.e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                                   kData))
                  .ok());
}

// A file shorter than its header says: the message says truncated, with both sizes.
TEST(SafetensorsErrorTest, TruncatedFileSaysSo) {
  TempDir dir;
  const std::string header = R"({"w":{"dtype":"F32","shape":[6],"data_offsets":[0,24]}})";
  const std::string full = safetensors_bytes(header, kData);
  const std::string path = (dir.path() / "bad.safetensors").string();
  expect_status(open_status(dir, full.substr(0, 20)), StatusCode::kDataLoss,
                {"truncated safetensors file " + path,
                 "header says at least " + std::to_string(8 + header.size()), "file has 20"});
  expect_status(open_status(dir, full.substr(0, full.size() - 5)), StatusCode::kDataLoss,
                {"truncated safetensors file " + path,
                 "header says " + std::to_string(full.size()) + " bytes",
                 "file has " + std::to_string(full.size() - 5), "tensor 'w'"});
}

TEST(SafetensorsErrorTest, NotARegularFile) {
  TempDir dir;
  const auto fifo = dir.path() / "fifo.safetensors";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Held open for writing, so that even a blocking open of it could not hang this test.
  const int holder = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  expect_status(SafetensorsFile::open(fifo).status(), StatusCode::kInvalidArgument,
                {"not a regular file: " + fifo.string()});
  ::close(holder);
  expect_status(SafetensorsFile::open("/dev/zero").status(), StatusCode::kInvalidArgument,
                {"not a regular file: /dev/zero"});
  expect_status(SafetensorsFile::open(dir.path()).status(), StatusCode::kInvalidArgument,
                {"not a regular file: " + dir.path().string()});
}

TEST(SafetensorsTest, FromBytes) {
  const std::vector<float> v = {1, 2, 3};
  const std::string bytes = build_safetensors({{"w", "F32", {3}, raw_bytes(v)}});
  const std::vector<uint8_t> buffer(bytes.begin(), bytes.end());
  Result<SafetensorsFile> f = SafetensorsFile::from_bytes(buffer, "mem");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const TensorInfo& w = f->tensors().at("w");
  EXPECT_EQ(w.file, "mem");
  std::vector<float> out(3);
  ASSERT_TRUE(tensor_to_f32(w, out.data()).ok());
  EXPECT_EQ(out, v);
  expect_status(
      SafetensorsFile::from_bytes(std::span(buffer).first(buffer.size() - 1), "mem").status(),
      StatusCode::kDataLoss, {"truncated safetensors file mem"});
}

TEST(SafetensorsErrorTest, NbytesDoesNotMatchShape) {
  TempDir dir;
  expect_status(
      open_status(dir,
                  safetensors_bytes(
                      R"({"w.short":{"dtype":"F32","shape":[2,4],"data_offsets":[0,24]}})", kData)),
      StatusCode::kDataLoss, {"bad.safetensors", "w.short", "24 bytes", "32"});
  // Dimensions whose product overflows 64 bits must not wrap around to a "match".
  expect_status(open_status(dir, safetensors_bytes(R"({"w.huge":{"dtype":"BF16",
          "shape":[4294967296,4294967296,2],"data_offsets":[0,0]}})",
                                                   kData)),
                StatusCode::kDataLoss, {"bad.safetensors", "w.huge"});
  expect_status(
      open_status(dir,
                  safetensors_bytes(
                      R"({"w.neg":{"dtype":"F32","shape":[-1,6],"data_offsets":[0,24]}})", kData)),
      StatusCode::kDataLoss, {"bad.safetensors", "w.neg", "shape"});
}

TEST(SafetensorsErrorTest, UnknownDtype) {
  TempDir dir;
  expect_status(
      open_status(
          dir, safetensors_bytes(R"({"w.f64":{"dtype":"F64","shape":[3],"data_offsets":[0,24]}})",
                                 kData)),
      StatusCode::kUnimplemented, {"bad.safetensors", "w.f64", "F64"});
  expect_status(open_status(dir, safetensors_bytes(
                                     R"({"w.none":{"shape":[3],"data_offsets":[0,12]}})", kData)),
                StatusCode::kDataLoss, {"bad.safetensors", "w.none", "dtype"});
}

TEST(SafetensorsErrorTest, BadMetadata) {
  TempDir dir;
  expect_status(open_status(dir, safetensors_bytes(R"({"__metadata__":{"n":3}})", kData)),
                StatusCode::kDataLoss, {"bad.safetensors", "__metadata__"});
}

TEST(SafetensorsErrorTest, MissingFile) {
  TempDir dir;
  expect_status(SafetensorsFile::open(dir.path() / "nope.safetensors").status(),
                StatusCode::kNotFound,
                {"no such file or directory: " + (dir.path() / "nope.safetensors").string()});
}

// Every truncation and many single-byte corruptions of a valid file: a Status, never a crash.
TEST(SafetensorsErrorTest, TruncationsAndByteFlipsNeverCrash) {
  TempDir dir;
  const std::vector<float> v = {1, 2, 3, 4, 5, 6};
  const std::string good = build_safetensors(
      {{"w", "F32", {2, 3}, raw_bytes(v)}, {"b", "F32", {}, raw_bytes(v).substr(0, 4)}},
      R"({"format":"pt"})");
  ASSERT_TRUE(open_status(dir, good).ok());
  for (size_t len = 0; len < good.size(); ++len) {
    Status s = open_status(dir, good.substr(0, len));
    EXPECT_FALSE(s.ok()) << "prefix of " << len << " bytes";
  }
  std::mt19937 rng(1234);
  for (int i = 0; i < 500; ++i) {
    std::string bad = good;
    size_t pos = rng() % (good.size() - kData.size());  // header bytes mostly
    bad[pos] = static_cast<char>(rng() & 0xff);
    Status s = open_status(dir, bad);
    if (!s.ok()) {
      EXPECT_NE(s.message().find("bad.safetensors"), std::string::npos) << s.message();
    }
  }
}

TEST(CheckpointErrorTest, NoWeightsInDirectory) {
  TempDir dir;
  expect_status(Checkpoint::open(dir.path()).status(), StatusCode::kNotFound,
                {dir.path().string(), "model.safetensors"});
  expect_status(Checkpoint::open(dir.path() / "absent").status(), StatusCode::kNotFound,
                {(dir.path() / "absent").string()});
}

TEST(CheckpointErrorTest, MissingShard) {
  TempDir dir;
  dir.write("model-00001-of-00002.safetensors",
            build_safetensors({{"model.a", "F32", {1}, raw_bytes(std::vector<float>{1})}}));
  dir.write("model.safetensors.index.json", R"({"weight_map": {
      "model.a": "model-00001-of-00002.safetensors",
      "model.b": "model-00002-of-00002.safetensors"}})");
  expect_status(Checkpoint::open(dir.path()).status(), StatusCode::kNotFound,
                {"model.safetensors.index.json", "model-00002-of-00002.safetensors", "model.b"});
}

TEST(CheckpointErrorTest, IndexProblems) {
  TempDir dir;
  dir.write("s1.safetensors",
            build_safetensors({{"model.a", "F32", {1}, raw_bytes(std::vector<float>{1})}}));
  dir.write("s2.safetensors",
            build_safetensors({{"model.a", "F32", {1}, raw_bytes(std::vector<float>{2})}}));

  dir.write("model.safetensors.index.json", R"({"weight_map": {"model.a": "s1.safetens)");
  expect_status(Checkpoint::open(dir.path()).status(), StatusCode::kDataLoss,
                {"model.safetensors.index.json", "JSON"});

  dir.write("model.safetensors.index.json", R"({"metadata": {}})");
  expect_status(Checkpoint::open(dir.path()).status(), StatusCode::kDataLoss,
                {"model.safetensors.index.json", "weight_map"});

  // The index places a tensor in a shard that does not hold it.
  dir.write("model.safetensors.index.json",
            R"({"weight_map": {"model.a": "s1.safetensors", "model.z": "s1.safetensors"}})");
  expect_status(Checkpoint::open(dir.path()).status(), StatusCode::kDataLoss,
                {"model.safetensors.index.json", "model.z", "s1.safetensors"});

  // The same tensor in two shards.
  dir.write("model.safetensors.index.json",
            R"({"weight_map": {"model.a": "s1.safetensors", "model.x": "s2.safetensors"}})");
  expect_status(Checkpoint::open(dir.path()).status(), StatusCode::kDataLoss, {"model.x"});
  dir.write("s2.safetensors",
            build_safetensors({{"model.a", "F32", {1}, raw_bytes(std::vector<float>{2})},
                               {"model.x", "F32", {1}, raw_bytes(std::vector<float>{3})}}));
  expect_status(Checkpoint::open(dir.path()).status(), StatusCode::kDataLoss,
                {"model.a", "s1.safetensors", "s2.safetensors"});

  // Shard names may not leave the model directory.
  dir.write("model.safetensors.index.json",
            R"({"weight_map": {"model.a": "../elsewhere/s1.safetensors"}})");
  expect_status(Checkpoint::open(dir.path()).status(), StatusCode::kDataLoss,
                {"model.safetensors.index.json", "model.a"});
}

TEST(CheckpointErrorTest, CorruptShardNamesTheShard) {
  TempDir dir;
  dir.write("s1.safetensors", "\x01\x02");
  dir.write("model.safetensors.index.json", R"({"weight_map": {"model.a": "s1.safetensors"}})");
  expect_status(Checkpoint::open(dir.path()).status(), StatusCode::kDataLoss, {"s1.safetensors"});
}

}  // namespace
}  // namespace sgl::model
