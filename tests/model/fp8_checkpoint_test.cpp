// Tests for FP8 checkpoints: E4M3 decoding, quantization_config parsing, Fp8WeightSource's scale
// rules and errors, and whole-model parity: the test models with their projections quantized to
// FP8 (per tensor, per channel, per block; each quant_method's names) give the same logits as
// f32 twins holding the values those FP8 bytes and scales stand for, at one rank and at two.
// Built with SGL_TEST_ON_CUDA: the parity on the GPU in float32 (the scales are applied on the
// host either way; this checks what reaches the device).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cache/req_to_token_pool.h"
#include "cache/token_to_kv_pool_allocator.h"
#include "core/allocator.h"
#include "core/fp8.h"
#include "core/half.h"
#include "model/fp8_weight_source.h"
#include "model/model_config.h"
#include "model/model_source.h"
#include "model/safetensors.h"
#include "model/weight_quantization.h"
#include "model_test_util.h"
#include "runner/forward_batch_builder.h"
#include "runner/kv_cache_scales.h"
#include "runner/model_runner.h"
#include "runner_test_util.h"
#include "tp_ranks.h"

namespace sgl::model {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using test_util::expect_status;
using test_util::max_abs_diff;
using test_util::prefill_logits;
using test_util::raw_bytes;
using test_util::SyntheticTensor;
using test_util::TempDir;
using test_util::testdata_models_dir;

// ---- E4M3 ----

TEST(Fp8E4M3Test, DecodesEveryKindOfValue) {
  EXPECT_EQ(fp8_e4m3_to_float(0x00), 0.0f);
  EXPECT_TRUE(std::signbit(fp8_e4m3_to_float(0x80)));
  EXPECT_EQ(fp8_e4m3_to_float(0x38), 1.0f);    // exponent 7 = bias
  EXPECT_EQ(fp8_e4m3_to_float(0x3c), 1.5f);    // mantissa 4 / 8
  EXPECT_EQ(fp8_e4m3_to_float(0xc0), -2.0f);   // sign
  EXPECT_EQ(fp8_e4m3_to_float(0x7e), 448.0f);  // the largest finite value
  EXPECT_EQ(fp8_e4m3_to_float(0xfe), -448.0f);
  EXPECT_EQ(fp8_e4m3_to_float(0x77), 240.0f);  // exponent 14, mantissa 7: no infinity there
  EXPECT_EQ(fp8_e4m3_to_float(0x01), std::ldexp(1.0f, -9));  // the smallest subnormal
  EXPECT_EQ(fp8_e4m3_to_float(0x07), 7 * std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8_e4m3_to_float(0x08), std::ldexp(1.0f, -6));  // the smallest normal
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0x7f)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0xff)));
  // Positive codes increase with their bytes, and the table holds the same values.
  for (int b = 0; b < 256; ++b) {
    const float v = fp8_e4m3_to_float(static_cast<uint8_t>(b));
    if (b > 0 && b < 0x7f) EXPECT_LT(fp8_e4m3_to_float(static_cast<uint8_t>(b - 1)), v) << b;
    if (!std::isnan(v)) EXPECT_EQ(fp8_e4m3_table()[b], v) << b;
  }
}

// The nearest E4M3 code of x (|x| <= 448), by search: obviously right, fast enough for the
// test models.
uint8_t nearest_e4m3(float x) {
  uint8_t best = 0;
  for (int b = 0; b < 0x7f; ++b) {
    if (std::fabs(fp8_e4m3_to_float(static_cast<uint8_t>(b)) - std::fabs(x)) <
        std::fabs(fp8_e4m3_to_float(best) - std::fabs(x))) {
      best = static_cast<uint8_t>(b);
    }
  }
  return static_cast<uint8_t>(x < 0 ? best | 0x80 : best);
}

// ---- quantization_config ----

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Result<WeightQuantization> parse_quant(const Json& q) {
  return parse_weight_quantization(Json{{"quantization_config", q}}, "test/config.json");
}

TEST(WeightQuantizationTest, Fp8MethodsParse) {
  Result<WeightQuantization> none = parse_weight_quantization(Json::object(), "c");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->quantized());

  Result<WeightQuantization> fp8 = parse_quant({{"quant_method", "fp8"},
                                                {"fmt", "e4m3"},
                                                {"activation_scheme", "dynamic"},
                                                {"weight_block_size", {128, 64}}});
  ASSERT_TRUE(fp8.ok()) << fp8.status().to_string();
  EXPECT_EQ(fp8->method, "fp8");
  EXPECT_EQ(fp8->block_size, (std::vector<int64_t>{128, 64}));
  EXPECT_EQ(fp8->describe(), "fp8, 128 x 64 blocks");

  Result<WeightQuantization> per_tensor =
      parse_quant({{"quant_method", "fp8"}, {"activation_scheme", "static"}});
  ASSERT_TRUE(per_tensor.ok());
  EXPECT_TRUE(per_tensor->block_size.empty());

  const Json float8 = {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}};
  Result<WeightQuantization> ct =
      parse_quant({{"quant_method", "compressed-tensors"},
                   {"format", "float-quantized"},
                   {"config_groups", {{"group_0", {{"weights", float8}, {"targets", {"Linear"}}}}}},
                   {"ignore", {"lm_head"}},
                   {"kv_cache_scheme", nullptr}});
  ASSERT_TRUE(ct.ok()) << ct.status().to_string();
  EXPECT_EQ(ct->method, "compressed-tensors");
  EXPECT_TRUE(ct->block_size.empty());

  Json block = float8;
  block["strategy"] = "block";
  block["block_structure"] = {128, 128};
  Result<WeightQuantization> ct_block =
      parse_quant({{"quant_method", "compressed-tensors"},
                   {"format", "float-quantized"},
                   {"config_groups", {{"a", {{"weights", block}}}, {"b", {{"weights", block}}}}}});
  ASSERT_TRUE(ct_block.ok()) << ct_block.status().to_string();
  EXPECT_EQ(ct_block->block_size, (std::vector<int64_t>{128, 128}));

  // compressed-tensors' older key.
  Result<WeightQuantization> older =
      parse_weight_quantization(Json{{"compression_config",
                                      {{"quant_method", "compressed-tensors"},
                                       {"format", "float-quantized"},
                                       {"config_groups", {{"g", {{"weights", float8}}}}}}}},
                                "c");
  ASSERT_TRUE(older.ok()) << older.status().to_string();
  EXPECT_EQ(older->method, "compressed-tensors");

  for (const Json& modelopt :
       {Json{{"quant_method", "modelopt"}, {"quant_algo", "FP8"}},
        Json{{"quant_method", "modelopt"}, {"quantization", {{"quant_algo", "FP8"}}}}}) {
    Result<WeightQuantization> m = parse_quant(modelopt);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->method, "modelopt");
  }
}

// ModelOpt's hf_quant_config.json counts where config.json says nothing; its other algorithms
// are refused by name.
TEST(WeightQuantizationTest, HfQuantConfigFile) {
  TempDir dir;
  Json cfg = Json::parse(read_text(testdata_models_dir() / "tiny-llama" / "config.json"));
  std::ofstream(dir.path() / "config.json") << cfg.dump();
  Result<ModelConfig> plain = load_model_config(dir.path());
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_FALSE(plain->quantization.quantized());
  const auto write_quant = [&](const std::string& text) {
    std::ofstream(dir.path() / "hf_quant_config.json", std::ios::trunc) << text;
  };
  write_quant(Json{{"quantization", {{"quant_algo", "FP8"}}}}.dump());
  Result<ModelConfig> fp8 = load_model_config(dir.path());
  ASSERT_TRUE(fp8.ok()) << fp8.status().to_string();
  EXPECT_EQ(fp8->quantization.method, "modelopt");
  write_quant(Json{{"quantization", {{"quant_algo", "NVFP4"}}}}.dump());
  expect_status(load_model_config(dir.path()).status(), StatusCode::kUnimplemented,
                {"hf_quant_config.json", "'NVFP4'"});
  write_quant("[1]");
  expect_status(load_model_config(dir.path()).status(), StatusCode::kInvalidArgument,
                {"hf_quant_config.json", "JSON object"});
}

// Every other method, and FP8 variants nothing here decodes, are refused by name.
TEST(WeightQuantizationTest, OtherMethodsAreRefusedByName) {
  for (const char* method : {"gptq", "awq", "bitsandbytes", "mxfp4"}) {
    expect_status(
        parse_quant({{"quant_method", method}, {"bits", 4}}).status(), StatusCode::kUnimplemented,
        {"test/config.json", "quantization_config", std::string("'") + method + "'", "FP8"});
  }
  expect_status(parse_quant(Json::object()).status(), StatusCode::kUnimplemented, {"(none given)"});
  expect_status(parse_quant({{"quant_method", "fp8"}, {"fmt", "e5m2"}}).status(),
                StatusCode::kUnimplemented, {"fmt 'e5m2'"});
  expect_status(parse_quant({{"quant_method", "modelopt"}, {"quant_algo", "NVFP4"}}).status(),
                StatusCode::kUnimplemented, {"modelopt", "'NVFP4'"});
  const Json int4 = {{"num_bits", 4}, {"type", "int"}, {"strategy", "group"}};
  expect_status(parse_quant({{"quant_method", "compressed-tensors"},
                             {"format", "pack-quantized"},
                             {"config_groups", {{"g", {{"weights", int4}}}}}})
                    .status(),
                StatusCode::kUnimplemented, {"format 'pack-quantized'"});
  expect_status(parse_quant({{"quant_method", "compressed-tensors"},
                             {"format", "naive-quantized"},
                             {"config_groups", {{"g", {{"weights", int4}}}}}})
                    .status(),
                StatusCode::kUnimplemented, {"group 'g'", "4-bit 'int'"});
  const Json group = {{"num_bits", 8}, {"type", "float"}, {"strategy", "group"}};
  expect_status(parse_quant({{"quant_method", "compressed-tensors"},
                             {"format", "float-quantized"},
                             {"config_groups", {{"g", {{"weights", group}}}}}})
                    .status(),
                StatusCode::kUnimplemented, {"strategy 'group'"});
  // Malformed fields are the config's fault.
  expect_status(parse_quant({{"quant_method", "fp8"}, {"weight_block_size", {128}}}).status(),
                StatusCode::kInvalidArgument, {"weight_block_size", "two positive integers"});
  expect_status(
      parse_quant({{"quant_method", "compressed-tensors"}, {"format", "float-quantized"}}).status(),
      StatusCode::kInvalidArgument, {"config_groups"});
}

// ---- checkpoints ----

// The KV cache scales a checkpoint with activation scales carries in every layer.
constexpr float kKScale = 0.5f, kVScale = 2.f;

// How a test checkpoint stores its projections.
struct Scheme {
  std::string name;
  Json quantization_config;
  enum Granularity { kTensor, kChannel, kBlock } granularity;
  int64_t block_rows = 0, block_cols = 0;
  std::string scale_suffix;  // "_scale_inv" or "_scale"
  std::string scale_dtype;   // "F32" or "BF16"
  // input_scale, k_scale (kKScale) and v_scale (kVScale) tensors beside them.
  bool activation_scales = false;
  // The config in ModelOpt's hf_quant_config.json ({"quantization": ...}) beside a config.json
  // without quantization_config, as NVIDIA's checkpoints have it.
  bool hf_quant_config_file = false;
};

Scheme fp8_blocks(int64_t rows, int64_t cols) {
  return {"fp8_blocks",
          {{"quant_method", "fp8"},
           {"fmt", "e4m3"},
           {"activation_scheme", "dynamic"},
           {"weight_block_size", {rows, cols}}},
          Scheme::kBlock,
          rows,
          cols,
          "_scale_inv",
          "F32"};
}

Scheme compressed_tensors_channel() {
  const Json weights = {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}};
  return {"ct_channel",
          {{"quant_method", "compressed-tensors"},
           {"format", "float-quantized"},
           {"config_groups", {{"group_0", {{"weights", weights}, {"targets", {"Linear"}}}}}}},
          Scheme::kChannel,
          0,
          0,
          "_scale",
          "BF16"};
}

Scheme modelopt_tensor() {
  return {"modelopt",
          {{"quant_method", "modelopt"}, {"quant_algo", "FP8"}},
          Scheme::kTensor,
          0,
          0,
          "_scale",
          "F32",
          true,
          true};
}

// A checkpoint tensor's values as f32 (the test models store F32 or BF16).
std::vector<float> f32_values(const TensorInfo& t) {
  std::vector<float> values(static_cast<size_t>(t.numel()));
  EXPECT_TRUE(tensor_to_f32(t, values.data()).ok()) << t.name;
  return values;
}

bool is_projection(const std::string& name) { return name.ends_with("proj.weight"); }

struct Quantized {
  fs::path fp8;   // the FP8 checkpoint
  fs::path twin;  // f32 weights equal to the FP8 ones times their scales
};

// The test model `model` with every projection (attention, MLP, experts, shared expert) in FP8
// as `scheme` stores it; other tensors as they are. Both directories' configs say float32.
Quantized quantize_model(const TempDir& dir, const std::string& model, const Scheme& scheme) {
  const fs::path src = testdata_models_dir() / model;
  Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(src);
  EXPECT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  std::vector<SyntheticTensor> fp8, twin;
  for (const std::string& name : (*ckpt)->names()) {
    const TensorInfo* t = (*ckpt)->find(name);
    std::vector<float> values = f32_values(*t);
    if (!is_projection(name)) {
      fp8.push_back({name, "F32", t->shape, raw_bytes(values)});
      twin.push_back({name, "F32", t->shape, raw_bytes(values)});
      continue;
    }
    const int64_t rows = t->shape[0], cols = t->shape[1];
    // Each value's scale index into `scales`, shaped as the scheme stores them.
    const int64_t block_rows = scheme.granularity == Scheme::kBlock     ? scheme.block_rows
                               : scheme.granularity == Scheme::kChannel ? 1
                                                                        : rows;
    const int64_t block_cols = scheme.granularity == Scheme::kBlock ? scheme.block_cols : cols;
    const int64_t scale_rows = (rows + block_rows - 1) / block_rows;
    const int64_t scale_cols = (cols + block_cols - 1) / block_cols;
    const auto scale_index = [&](int64_t r, int64_t c) {
      return (r / block_rows) * scale_cols + c / block_cols;
    };
    std::vector<float> amax(static_cast<size_t>(scale_rows * scale_cols), 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        float& m = amax[scale_index(r, c)];
        m = std::max(m, std::fabs(values[r * cols + c]));
      }
    }
    std::vector<float> scales(amax.size());
    std::vector<uint16_t> scales_bf16(amax.size());
    for (size_t i = 0; i < amax.size(); ++i) {
      scales[i] = amax[i] > 0 ? amax[i] / 448.0f : 1.0f;
      scales_bf16[i] = float_to_bf16(scales[i]);
      if (scheme.scale_dtype == "BF16") scales[i] = bf16_to_float(scales_bf16[i]);
    }
    std::vector<uint8_t> codes(values.size());
    std::vector<float> decoded(values.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const float s = scales[scale_index(r, c)];
        const size_t i = static_cast<size_t>(r * cols + c);
        codes[i] = nearest_e4m3(std::clamp(values[i] / s, -448.0f, 448.0f));
        decoded[i] = fp8_e4m3_to_float(codes[i]) * s;
      }
    }
    fp8.push_back({name, "F8_E4M3", t->shape, raw_bytes(codes)});
    const std::vector<int64_t> scale_shape =
        scheme.granularity == Scheme::kTensor    ? std::vector<int64_t>{}
        : scheme.granularity == Scheme::kChannel ? std::vector<int64_t>{rows, 1}
                                                 : std::vector<int64_t>{scale_rows, scale_cols};
    fp8.push_back({name + scheme.scale_suffix, scheme.scale_dtype, scale_shape,
                   scheme.scale_dtype == "BF16" ? raw_bytes(scales_bf16) : raw_bytes(scales)});
    if (scheme.activation_scales) {
      const std::string module = name.substr(0, name.size() - std::string(".weight").size());
      fp8.push_back({module + ".input_scale", "F32", {}, raw_bytes(std::vector<float>{0.5f})});
      if (name.ends_with("k_proj.weight") || name.ends_with("v_proj.weight")) {
        const std::string attn = module.substr(0, module.rfind('.'));
        const bool k = name.ends_with("k_proj.weight");
        fp8.push_back({attn + (k ? ".k_scale" : ".v_scale"),
                       "F32",
                       {},
                       raw_bytes(std::vector<float>{k ? kKScale : kVScale})});
      }
    }
    twin.push_back({name, "F32", t->shape, raw_bytes(decoded)});
  }
  Json cfg = Json::parse(read_text(src / "config.json"));
  cfg.erase("torch_dtype");
  cfg["dtype"] = "float32";
  Quantized out{dir.path() / (model + "-" + scheme.name), dir.path() / (model + "-twin")};
  for (const auto& [path, tensors] : {std::pair{out.fp8, &fp8}, std::pair{out.twin, &twin}}) {
    fs::create_directories(path);
    Json c = cfg;
    if (path == out.fp8 && scheme.hf_quant_config_file) {
      std::ofstream(path / "hf_quant_config.json")
          << Json{{"producer", {{"name", "modelopt"}}},
                  {"quantization", {{"quant_algo", "FP8"}, {"kv_cache_quant_algo", "FP8"}}}}
                 .dump();
    } else if (path == out.fp8) {
      c["quantization_config"] = scheme.quantization_config;
    }
    std::ofstream(path / "config.json") << c.dump();
    std::ofstream(path / "model.safetensors", std::ios::binary)
        << test_util::build_safetensors(*tensors, R"({"format":"pt"})");
  }
  return out;
}

std::unique_ptr<runner::ModelRunner> make_runner(const fs::path& path,
                                                 distributed::Communicator* comm = nullptr,
                                                 int tp = 1,
                                                 const std::string& kv_cache_dtype = "auto") {
  runner::ModelRunnerOptions options;
  options.kv_cache_dtype = kv_cache_dtype;
  options.max_num_tokens = 64;
  options.max_batch_size = 4;
  options.num_kv_slots = 256;
  options.tp_size = tp;
#ifdef SGL_TEST_ON_CUDA
  options.device = Device::cuda(0);
  options.dtype = "float32";
#endif
  auto r = runner::ModelRunner::create(path, options, comm);
  EXPECT_TRUE(r.ok()) << path << ": " << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

const std::vector<int32_t> kPrompt = {1, 17, 250, 3, 999, 42, 42, 7, 512, 100, 64, 2, 88};

struct ParityCase {
  std::string model;
  Scheme scheme;
};

void PrintTo(const ParityCase& p, std::ostream* os) { *os << p.model << " " << p.scheme.name; }

class Fp8ParityTest : public ::testing::TestWithParam<ParityCase> {};

// The same f32 values reach the same kernels: the logits are equal (bit for bit on the CPU;
// the GPU's kernels may add in another order run to run), and the FP8 model's differ from the
// original's (the quantization did something).
TEST_P(Fp8ParityTest, SameLogitsAsTheDequantizedTwin) {
  const ParityCase& p = GetParam();
  TempDir dir;
  const Quantized q = quantize_model(dir, p.model, p.scheme);
  Result<ModelConfig> config = load_model_config(q.fp8);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ(config->quantization.method, p.scheme.quantization_config["quant_method"]);

  auto fp8 = make_runner(q.fp8);
  auto twin = make_runner(q.twin);
  ASSERT_TRUE(fp8 && twin);
  const std::vector<float> a = prefill_logits(*fp8, kPrompt);
  const std::vector<float> b = prefill_logits(*twin, kPrompt);
#ifdef SGL_TEST_ON_CUDA
  EXPECT_LT(max_abs_diff(a, b), 1e-5);
#else
  EXPECT_EQ(max_abs_diff(a, b), 0.0);
#endif
  auto original = make_runner(testdata_models_dir() / p.model);
  ASSERT_TRUE(original);
  EXPECT_GT(max_abs_diff(a, prefill_logits(*original, kPrompt)), 0.0);
}

INSTANTIATE_TEST_SUITE_P(
    Models, Fp8ParityTest,
    ::testing::Values(ParityCase{"tiny-llama", fp8_blocks(48, 40)},  // blocks cut at the edges
                      ParityCase{"tiny-qwen3", compressed_tensors_channel()},
                      ParityCase{"tiny-qwen3-moe", fp8_blocks(32, 32)},
                      ParityCase{"tiny-mixtral", modelopt_tensor()},
                      ParityCase{"tiny-qwen2-moe", compressed_tensors_channel()}),
    [](const ::testing::TestParamInfo<ParityCase>& info) {
      std::string name = info.param.model + "_" + info.param.scheme.name;
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

#ifndef SGL_TEST_ON_CUDA  // one GPU: no second rank
// Each tensor-parallel rank cuts its shard out of the dequantized tensor: two ranks' logits
// equal one rank's (the all-reduce's summation order aside).
TEST(Fp8CheckpointTest, TensorParallelRanksEqualOneRank) {
  TempDir dir;
  const Quantized q = quantize_model(dir, "tiny-qwen3-moe", fp8_blocks(48, 40));
  auto one = make_runner(q.fp8);
  ASSERT_TRUE(one);
  const std::vector<float> ref = prefill_logits(*one, kPrompt);
  std::vector<std::vector<float>> ranks(2);
  ::sgl::test::run_ranks(2, [&](int rank, distributed::Communicator& comm) {
    auto runner = make_runner(q.fp8, &comm, 2);
    ASSERT_TRUE(runner);
    ranks[static_cast<size_t>(rank)] = prefill_logits(*runner, kPrompt);
  });
  for (const std::vector<float>& logits : ranks) EXPECT_LT(max_abs_diff(logits, ref), 1e-4);
}
#endif

// The scales (and the activation and KV scales nothing reads) are not weights the model left
// unread; the FP8 tensors read as their values times their scales.
TEST(Fp8CheckpointTest, SourceHidesScalesAndAppliesThem) {
  TempDir dir;
  const Quantized q = quantize_model(dir, "tiny-mixtral", modelopt_tensor());
  Result<ModelSource> source = open_model_source(q.fp8);
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  const std::vector<std::string> names = source->weights->names();
  for (const std::string& name : names) {
    EXPECT_FALSE(name.ends_with("_scale") || name.ends_with("_scale_inv")) << name;
  }
  EXPECT_TRUE(source->weights->has("model.layers.0.self_attn.q_proj.weight_scale"));
  const std::string q_proj = "model.layers.0.self_attn.q_proj.weight";
  EXPECT_NE(std::find(names.begin(), names.end(), q_proj), names.end());
  Result<std::vector<int64_t>> shape = source->weights->shape(q_proj);
  ASSERT_TRUE(shape.ok());
  Result<std::optional<StoredTensor>> stored = source->weights->stored(q_proj, *shape);
  ASSERT_TRUE(stored.ok());
  EXPECT_FALSE(stored->has_value());  // only the host applies the scales
  std::vector<float> values(static_cast<size_t>((*shape)[0] * (*shape)[1]));
  ASSERT_TRUE(source->weights->read_f32(q_proj, *shape, values.data()).ok());
  Result<std::unique_ptr<Checkpoint>> twin = Checkpoint::open(q.twin);
  ASSERT_TRUE(twin.ok());
  EXPECT_EQ(values, f32_values(*(*twin)->find(q_proj)));
}

// --kv-cache-dtype fp8_*: the checkpoint's k_scale / v_scale become the FP8 cache's scales, so a
// model over the FP8 checkpoint and its twin (the same weights, no KV scales) compute alike with
// a cache in the compute dtype (SameLogitsAsTheDequantizedTwin) and apart with an FP8 one.
TEST(Fp8CheckpointTest, KvCacheScalesReachTheFp8Cache) {
  TempDir dir;
  const Quantized q = quantize_model(dir, "tiny-mixtral", modelopt_tensor());
  Result<ModelSource> source = open_model_source(q.fp8);
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  Result<std::vector<attention::KvScales>> scales =
      runner::read_kv_cache_scales(*source->weights, source->config.num_hidden_layers);
  ASSERT_TRUE(scales.ok()) << scales.status().to_string();
  ASSERT_EQ(static_cast<int64_t>(scales->size()), source->config.num_hidden_layers);
  for (const attention::KvScales& s : *scales) {
    EXPECT_EQ(s.k, kKScale);
    EXPECT_EQ(s.v, kVScale);
  }
  Result<ModelSource> twin_source = open_model_source(q.twin);
  ASSERT_TRUE(twin_source.ok());
  Result<std::vector<attention::KvScales>> none =
      runner::read_kv_cache_scales(*twin_source->weights, twin_source->config.num_hidden_layers);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  auto fp8 = make_runner(q.fp8, nullptr, 1, "fp8_e4m3");
  auto twin = make_runner(q.twin, nullptr, 1, "fp8_e4m3");
  auto plain = make_runner(q.twin);  // the compute dtype's cache
  ASSERT_TRUE(fp8 && twin && plain);
  const std::vector<float> scaled = prefill_logits(*fp8, kPrompt);
  const std::vector<float> unscaled = prefill_logits(*twin, kPrompt);
  const std::vector<float> reference = prefill_logits(*plain, kPrompt);
  // (How near either stays to the compute dtype's cache, fp8_kv_cache_test bounds.)
  EXPECT_GT(max_abs_diff(scaled, unscaled), 0.0);
  EXPECT_GT(max_abs_diff(scaled, reference), 0.0);
}

// KV cache scales in some layers only, for K only, of several values or not positive are clear
// errors naming the layer or the tensor.
TEST(Fp8CheckpointTest, BrokenKvCacheScalesAreClearErrors) {
  TempDir dir;
  int checkpoints = 0;
  const auto read_with = [&](const std::vector<SyntheticTensor>& tensors, int64_t layers) {
    const fs::path path = dir.path() / ("kv" + std::to_string(checkpoints++));
    fs::create_directories(path);
    std::ofstream(path / "model.safetensors", std::ios::binary)
        << test_util::build_safetensors(tensors);
    Result<std::unique_ptr<SafetensorsWeightSource>> source = SafetensorsWeightSource::open(path);
    EXPECT_TRUE(source.ok()) << source.status().to_string();
    return runner::read_kv_cache_scales(**source, layers);
  };
  auto scalar = [](const std::string& name, float value) {
    return SyntheticTensor{name, "F32", {}, raw_bytes(std::vector<float>{value})};
  };
  const std::string l0 = "model.layers.0.self_attn.", l1 = "model.layers.1.self_attn.";
  expect_status(read_with({scalar(l0 + "k_scale", 1), scalar(l0 + "v_scale", 1)}, 2).status(),
                StatusCode::kInvalidArgument, {"layer 1", "no KV cache scales"});
  expect_status(read_with({scalar(l0 + "k_scale", 1)}, 1).status(), StatusCode::kInvalidArgument,
                {"layer 0", "for K only"});
  expect_status(read_with({scalar(l0 + "kv_scale", -1)}, 1).status(), StatusCode::kInvalidArgument,
                {l0 + "kv_scale", "positive and finite"});
  expect_status(
      read_with({SyntheticTensor{l0 + "k_scale", "F32", {2}, raw_bytes(std::vector<float>{1, 1})},
                 scalar(l0 + "v_scale", 1)},
                1)
          .status(),
      StatusCode::kInvalidArgument, {l0 + "k_scale", "holds 2 values"});
  // The projections' names (ModelOpt's older checkpoints) and one kv_scale for both.
  const SyntheticTensor k_proj = scalar(l0 + "k_proj.k_scale", 0.25f);
  const SyntheticTensor v_proj = scalar(l0 + "v_proj.v_scale", 4.f);
  Result<std::vector<attention::KvScales>> read =
      read_with({k_proj, v_proj, scalar(l1 + "kv_scale", 3.f)}, 2);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].k, 0.25f);
  EXPECT_EQ((*read)[0].v, 4.f);
  EXPECT_EQ((*read)[1].k, 3.f);
  EXPECT_EQ((*read)[1].v, 3.f);
}

// A missing scale, a scale of the wrong shape or dtype, and an FP8 tensor in a checkpoint whose
// config says nothing of FP8 are clear errors naming the tensor.
TEST(Fp8CheckpointTest, BrokenScalesAreClearErrors) {
  TempDir dir;
  const std::string w = "model.layers.0.mlp.down_proj.weight";
  const std::vector<uint8_t> codes(8 * 6, 0x38);
  int checkpoints = 0;
  const auto open_with = [&](const std::vector<SyntheticTensor>& tensors, const Scheme& scheme) {
    const fs::path path = dir.path() / ("ckpt" + std::to_string(checkpoints++));
    fs::create_directories(path);
    std::ofstream(path / "model.safetensors", std::ios::binary)
        << test_util::build_safetensors(tensors);
    Result<std::unique_ptr<SafetensorsWeightSource>> inner = SafetensorsWeightSource::open(path);
    EXPECT_TRUE(inner.ok()) << inner.status().to_string();
    Result<WeightQuantization> quant = parse_quant(scheme.quantization_config);
    EXPECT_TRUE(quant.ok());
    return Fp8WeightSource(std::move(*inner), *quant);
  };
  const SyntheticTensor weight{w, "F8_E4M3", {8, 6}, raw_bytes(codes)};

  Fp8WeightSource missing = open_with({weight}, fp8_blocks(4, 4));
  expect_status(missing.check(w, {8, 6}), StatusCode::kNotFound,
                {w, "f8e4m3", "_scale_inv", "missing"});
  expect_status(missing.check(w, {6, 8}), StatusCode::kInvalidArgument, {w, "[8, 6]"});

  const SyntheticTensor wrong_blocks{
      w + "_scale_inv", "F32", {2, 1}, raw_bytes(std::vector<float>{1, 1})};
  expect_status(open_with({weight, wrong_blocks}, fp8_blocks(4, 4)).check(w, {8, 6}),
                StatusCode::kInvalidArgument, {"_scale_inv", "[2, 1]", "needs [2, 2]", "4 x 4"});

  const SyntheticTensor wrong_channels{
      w + "_scale", "F32", {4, 1}, raw_bytes(std::vector<float>(4, 1.0f))};
  expect_status(open_with({weight, wrong_channels}, compressed_tensors_channel()).check(w, {8, 6}),
                StatusCode::kInvalidArgument, {"[4, 1]", "one per output channel"});

  const SyntheticTensor int_scale{w + "_scale", "I32", {}, raw_bytes(std::vector<int32_t>{1})};
  expect_status(open_with({weight, int_scale}, modelopt_tensor()).check(w, {8, 6}),
                StatusCode::kUnimplemented, {"_scale", "i32"});

  // Without a quantization_config the plain source refuses the FP8 bytes.
  const fs::path plain = dir.path() / "plain";
  fs::create_directories(plain);
  std::ofstream(plain / "model.safetensors", std::ios::binary)
      << test_util::build_safetensors({weight});
  Result<std::unique_ptr<SafetensorsWeightSource>> source = SafetensorsWeightSource::open(plain);
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  expect_status((*source)->check(w, {8, 6}), StatusCode::kUnimplemented,
                {w, "f8e4m3", "expected a float type"});

  // One scale a tensor reads every value times it.
  const SyntheticTensor one_scale{w + "_scale", "F32", {1}, raw_bytes(std::vector<float>{0.25f})};
  Fp8WeightSource good = open_with({weight, one_scale}, modelopt_tensor());
  std::vector<float> values(48);
  ASSERT_TRUE(good.read_f32(w, {8, 6}, values.data()).ok());
  EXPECT_EQ(values, std::vector<float>(48, 0.25f));
}

}  // namespace
}  // namespace sgl::model
