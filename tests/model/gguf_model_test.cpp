// Tests for GGUF models: name mapping, the q/k row permutation (index and RoPE semantics), config
// from metadata, GgufWeightSource errors, open_model_source, and whole-model parity: the test
// models converted to GGUF (F32, F16, Q8_0; Llama q/k permuted as llama.cpp's converter does)
// give the same logits through ModelRunner as safetensors twins holding the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cache/req_to_token_pool.h"
#include "cache/token_to_kv_pool_allocator.h"
#include "core/allocator.h"
#include "core/half.h"
#include "expected_shard_bytes.h"
#include "gguf_test_util.h"
#include "kernels/convert_stored.h"
#include "kernels/random_stored.h"
#include "model/dequant.h"
#include "model/gguf.h"
#include "model/gguf_config.h"
#include "model/gguf_weight_source.h"
#include "model/model_registry.h"
#include "model/model_source.h"
#include "model/safetensors.h"
#include "model/weight_loader.h"
#include "model_test_util.h"
#include "runner/forward_batch_builder.h"
#include "runner/model_runner.h"
#include "runner_test_util.h"
#include "tp_ranks.h"

namespace sgl::model {
namespace {

namespace fs = std::filesystem;
using test_util::expect_status;
using test_util::gguf_bool;
using test_util::gguf_f32;
using test_util::gguf_i32_array;
using test_util::gguf_string;
using test_util::gguf_u32;
using test_util::GgufWriter;
using test_util::max_abs_diff;
using test_util::prefill_logits;
using test_util::raw_bytes;
using test_util::SyntheticTensor;
using test_util::TempDir;
using test_util::testdata_models_dir;

constexpr uint32_t kTypeF32 = 0, kTypeF16 = 1, kTypeQ8_0 = 8, kTypeIQ2_XXS = 16;

// ---- names ----

TEST(GgufNamesTest, HuggingFaceToGgufAndBack) {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
      {"model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight"},
      {"model.layers.12.self_attn.q_proj.weight", "blk.12.attn_q.weight"},
      {"model.layers.3.self_attn.k_proj.weight", "blk.3.attn_k.weight"},
      {"model.layers.3.self_attn.v_proj.weight", "blk.3.attn_v.weight"},
      {"model.layers.3.self_attn.o_proj.weight", "blk.3.attn_output.weight"},
      {"model.layers.1.self_attn.q_proj.bias", "blk.1.attn_q.bias"},
      {"model.layers.1.self_attn.k_proj.bias", "blk.1.attn_k.bias"},
      {"model.layers.1.self_attn.v_proj.bias", "blk.1.attn_v.bias"},
      {"model.layers.7.self_attn.q_norm.weight", "blk.7.attn_q_norm.weight"},
      {"model.layers.7.self_attn.k_norm.weight", "blk.7.attn_k_norm.weight"},
      {"model.layers.29.post_attention_layernorm.weight", "blk.29.ffn_norm.weight"},
      {"model.layers.2.mlp.gate_proj.weight", "blk.2.ffn_gate.weight"},
      {"model.layers.2.mlp.up_proj.weight", "blk.2.ffn_up.weight"},
      {"model.layers.2.mlp.down_proj.weight", "blk.2.ffn_down.weight"},
  };
  for (const auto& [hf, gguf] : pairs) {
    EXPECT_EQ(gguf_tensor_name(hf), gguf) << hf;
    EXPECT_EQ(hf_tensor_name(gguf), hf) << gguf;
  }
  for (const char* bad : {"model.layers.x.mlp.up_proj.weight", "model.layers.1.mlp.experts.0.w1",
                          "model.layers..mlp.up_proj.weight", "lm_head.bias", ""}) {
    EXPECT_FALSE(gguf_tensor_name(bad)) << bad;
  }
  for (const char* bad : {"rope_freqs.weight", "blk.1a.attn_q.weight", "blk.1.ffn_gate_exps.weight",
                          "blk.attn_q.weight"}) {
    EXPECT_FALSE(hf_tensor_name(bad)) << bad;
  }
}

// MoE blocks: routers and shared experts map one to one; each expert is a slice of a stacked
// tensor, spelled as Qwen or Mixtral checkpoints spell it.
TEST(GgufNamesTest, MixtureOfExperts) {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"model.layers.4.mlp.gate.weight", "blk.4.ffn_gate_inp.weight"},
      {"model.layers.4.mlp.shared_expert.gate_proj.weight", "blk.4.ffn_gate_shexp.weight"},
      {"model.layers.4.mlp.shared_expert.up_proj.weight", "blk.4.ffn_up_shexp.weight"},
      {"model.layers.4.mlp.shared_expert.down_proj.weight", "blk.4.ffn_down_shexp.weight"},
      {"model.layers.4.mlp.shared_expert_gate.weight", "blk.4.ffn_gate_inp_shexp.weight"},
  };
  for (const auto& [hf, gguf] : pairs) {
    EXPECT_EQ(gguf_tensor_ref(hf), (GgufTensorRef{gguf, -1})) << hf;
    EXPECT_EQ(hf_tensor_name(gguf, MoeStyle::kQwen), hf) << gguf;
  }
  EXPECT_EQ(gguf_tensor_name("model.layers.1.block_sparse_moe.gate.weight"),
            "blk.1.ffn_gate_inp.weight");
  EXPECT_EQ(hf_tensor_name("blk.1.ffn_gate_inp.weight", MoeStyle::kMixtral),
            "model.layers.1.block_sparse_moe.gate.weight");

  const std::vector<std::tuple<std::string, std::string, std::string, int64_t>> experts = {
      {"model.layers.2.mlp.experts.0.gate_proj.weight",
       "model.layers.2.block_sparse_moe.experts.0.w1.weight", "blk.2.ffn_gate_exps.weight", 0},
      {"model.layers.2.mlp.experts.17.up_proj.weight",
       "model.layers.2.block_sparse_moe.experts.17.w3.weight", "blk.2.ffn_up_exps.weight", 17},
      {"model.layers.30.mlp.experts.127.down_proj.weight",
       "model.layers.30.block_sparse_moe.experts.127.w2.weight", "blk.30.ffn_down_exps.weight",
       127},
  };
  for (const auto& [qwen, mixtral, gguf, expert] : experts) {
    EXPECT_EQ(gguf_tensor_ref(qwen), (GgufTensorRef{gguf, expert})) << qwen;
    EXPECT_EQ(gguf_tensor_ref(mixtral), (GgufTensorRef{gguf, expert})) << mixtral;
    EXPECT_EQ(hf_expert_name(gguf, expert, MoeStyle::kQwen), qwen);
    EXPECT_EQ(hf_expert_name(gguf, expert, MoeStyle::kMixtral), mixtral);
    EXPECT_FALSE(hf_tensor_name(gguf)) << gguf;  // stacked: no single name
  }
  for (const char* bad :
       {"model.layers.2.mlp.experts.-1.up_proj.weight",
        "model.layers.2.mlp.experts.x.up_proj.weight", "model.layers.2.mlp.experts.1.w3.weight",
        "model.layers.2.block_sparse_moe.experts.1.up_proj.weight",
        "model.layers.2.mlp.experts..up_proj.weight",
        "model.layers.2.mlp.experts.1.up_proj.bias"}) {
    EXPECT_FALSE(gguf_tensor_ref(bad)) << bad;
  }
  EXPECT_FALSE(hf_expert_name("blk.2.ffn_up.weight", 0, MoeStyle::kQwen));
  EXPECT_FALSE(hf_expert_name("blk.2.ffn_up_exps.weight", -1, MoeStyle::kQwen));
}

// ---- the q/k permutation ----

// llama.cpp's converter, written the way it is described there: view the rows as
// [n_head, 2, D / 2] (rotate-half halves), swap the last two axes to [n_head, D / 2, 2].
std::vector<float> llama_cpp_permute(const std::vector<float>& w, int64_t rows, int64_t cols,
                                     int64_t n_head) {
  const int64_t d = rows / n_head, half = d / 2;
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t a = 0; a < 2; ++a) {
      for (int64_t b = 0; b < half; ++b) {
        const int64_t src_row = (h * 2 + a) * half + b;  // index (h, a, b) of [n_head, 2, half]
        const int64_t dst_row = (h * half + b) * 2 + a;  // index (h, b, a) of [n_head, half, 2]
        for (int64_t c = 0; c < cols; ++c) out[dst_row * cols + c] = w[src_row * cols + c];
      }
    }
  }
  return out;
}

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(GgufPermuteTest, SmallExample) {
  // Two heads of 4 rows, one column: per head, rotate-half [a0 a1 | b0 b1] -> [a0 b0 a1 b1].
  const std::vector<float> hf = {0, 1, 2, 3, 10, 11, 12, 13};
  std::vector<float> il(8), back(8);
  permute_rows_to_interleaved(hf.data(), 8, 1, 2, il.data());
  EXPECT_EQ(il, (std::vector<float>{0, 2, 1, 3, 10, 12, 11, 13}));
  permute_rows_to_rotate_half(il.data(), 8, 1, 2, back.data());
  EXPECT_EQ(back, hf);
}

TEST(GgufPermuteTest, RoundTripAndMatchesConverter) {
  for (auto [n_head, d, cols] : {std::tuple<int64_t, int64_t, int64_t>{9, 64, 5},
                                 {3, 64, 7},
                                 {4, 32, 1},
                                 {1, 2, 3},
                                 {2, 48, 4}}) {
    const int64_t rows = n_head * d;
    const std::vector<float> hf = random_values(static_cast<size_t>(rows * cols), 7);
    const std::vector<float> converted = llama_cpp_permute(hf, rows, cols, n_head);
    std::vector<float> ours(hf.size()), back(hf.size());
    permute_rows_to_interleaved(hf.data(), rows, cols, n_head, ours.data());
    EXPECT_EQ(ours, converted) << n_head << "x" << d;
    permute_rows_to_rotate_half(converted.data(), rows, cols, n_head, back.data());
    EXPECT_EQ(back, hf) << n_head << "x" << d;
  }
}

// The point of the permutation: interleaved RoPE (pairs 2i, 2i+1 at frequency i, what
// llama.cpp runs for Llama) on permuted rows equals rotate-half RoPE (pairs i, i + D/2, what we
// run) on the original rows. So a projection un-permuted at load gives our RoPE the same q/k.
TEST(GgufPermuteTest, InterleavedRopeOnPermutedEqualsRotateHalfRope) {
  const int64_t n_head = 3, d = 16, half = d / 2, hidden = 12;
  const std::vector<float> w = random_values(static_cast<size_t>(n_head * d * hidden), 3);
  const std::vector<float> x = random_values(static_cast<size_t>(hidden), 4);
  const std::vector<float> w_il = llama_cpp_permute(w, n_head * d, hidden, n_head);
  auto project = [&](const std::vector<float>& m) {
    std::vector<double> q(static_cast<size_t>(n_head * d));
    for (int64_t r = 0; r < n_head * d; ++r) {
      for (int64_t c = 0; c < hidden; ++c) q[r] += double{m[r * hidden + c]} * x[c];
    }
    return q;
  };
  std::vector<double> q_hf = project(w), q_il = project(w_il);
  const double pos = 5;
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      const double theta = pos * std::pow(10000.0, -2.0 * i / d);
      const double c = std::cos(theta), s = std::sin(theta);
      double& a = q_hf[h * d + i];  // rotate-half pair
      double& b = q_hf[h * d + half + i];
      const double a0 = a, b0 = b;
      a = a0 * c - b0 * s;
      b = b0 * c + a0 * s;
      double& e = q_il[h * d + 2 * i];  // interleaved pair
      double& o = q_il[h * d + 2 * i + 1];
      const double e0 = e, o0 = o;
      e = e0 * c - o0 * s;
      o = o0 * c + e0 * s;
    }
  }
  std::vector<float> il_f(q_il.begin(), q_il.end()), back(il_f.size());
  permute_rows_to_rotate_half(il_f.data(), n_head * d, 1, n_head, back.data());
  for (size_t r = 0; r < back.size(); ++r) EXPECT_NEAR(back[r], q_hf[r], 1e-5) << r;
}

// ---- HF checkpoint -> GGUF conversion (the test's own converter) ----

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Q8_0 quantization (round to nearest, d = amax / 127) and the values it decodes to.
std::string quantize_q8_0(const std::vector<float>& x, std::vector<float>* decoded) {
  std::string out;
  decoded->resize(x.size());
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    const uint16_t d16 = float_to_f16(amax / 127.0f);
    const float d = f16_to_float(d16);
    out += test_util::le_bytes(d16);
    for (int j = 0; j < 32; ++j) {
      const int q = d == 0 ? 0 : static_cast<int>(std::lround(x[b * 32 + j] / d));
      const int8_t qc = static_cast<int8_t>(std::clamp(q, -127, 127));
      out += static_cast<char>(qc);
      (*decoded)[b * 32 + j] = static_cast<float>(qc) * d;
    }
  }
  return out;
}

// A checkpoint tensor's values as f32 (the test models store F32 or BF16).
std::vector<float> f32_values(const TensorInfo& t) {
  std::vector<float> values(static_cast<size_t>(t.numel()));
  if (t.dtype == DType::kF32) {
    std::memcpy(values.data(), t.data, t.nbytes);
  } else {
    EXPECT_EQ(t.dtype, DType::kBF16) << t.name;
    for (size_t i = 0; i < values.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, t.data + 2 * i, 2);
      values[i] = bf16_to_float(bits);
    }
  }
  return values;
}

struct Converted {
  fs::path gguf;  // the GGUF file
  fs::path twin;  // a Hugging Face directory (config dtype float32) holding the same values
};

// Converts the test model `model` (or the checkpoint at `from`, named `model`) to GGUF with 2-D
// tensors stored as `type` (1-D tensors stay F32, as llama.cpp keeps norms and biases),
// permuting Llama q/k rows as llama.cpp does.
Converted convert_model(const TempDir& dir, const std::string& model, const std::string& arch,
                        uint32_t type, const fs::path& from = {}) {
  const fs::path src = from.empty() ? testdata_models_dir() / model : from;
  Result<ModelConfig> config = load_model_config(src);
  EXPECT_TRUE(config.ok()) << config.status().to_string();
  const ModelConfig& c = *config;
  Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(src);
  EXPECT_TRUE(ckpt.ok()) << ckpt.status().to_string();

  GgufWriter w;
  const auto key = [&](const std::string& k) { return arch + "." + k; };
  w.kv("general.architecture", gguf_string(arch))
      .kv("general.name", gguf_string(model))
      .kv(key("context_length"), gguf_u32(static_cast<uint32_t>(c.max_position_embeddings)))
      .kv(key("embedding_length"), gguf_u32(static_cast<uint32_t>(c.hidden_size)))
      .kv(key("block_count"), gguf_u32(static_cast<uint32_t>(c.num_hidden_layers)))
      .kv(key("feed_forward_length"), gguf_u32(static_cast<uint32_t>(c.intermediate_size)))
      .kv(key("attention.head_count"), gguf_u32(static_cast<uint32_t>(c.num_attention_heads)))
      .kv(key("attention.head_count_kv"), gguf_u32(static_cast<uint32_t>(c.num_key_value_heads)))
      .kv(key("attention.key_length"), gguf_u32(static_cast<uint32_t>(c.head_dim)))
      .kv(key("attention.value_length"), gguf_u32(static_cast<uint32_t>(c.head_dim)))
      .kv(key("rope.dimension_count"), gguf_u32(static_cast<uint32_t>(c.head_dim)))
      .kv(key("rope.freq_base"), gguf_f32(static_cast<float>(c.rope_theta)))
      .kv(key("attention.layer_norm_rms_epsilon"), gguf_f32(static_cast<float>(c.rms_norm_eps)))
      .kv("tokenizer.ggml.bos_token_id", gguf_u32(static_cast<uint32_t>(c.bos_token_id)))
      .kv("tokenizer.ggml.eos_token_id", gguf_u32(static_cast<uint32_t>(c.eos_token_ids.at(0))));
  if (c.num_experts > 0) {
    w.kv(key("expert_count"), gguf_u32(static_cast<uint32_t>(c.num_experts)))
        .kv(key("expert_used_count"), gguf_u32(static_cast<uint32_t>(c.num_experts_per_tok)));
    if (arch != "llama") {
      w.kv(key("expert_feed_forward_length"),
           gguf_u32(static_cast<uint32_t>(c.moe_intermediate_size)));
    }
    if (c.shared_expert_intermediate_size > 0) {
      w.kv(key("expert_shared_feed_forward_length"),
           gguf_u32(static_cast<uint32_t>(c.shared_expert_intermediate_size)));
    }
  }

  // Each expert's stored bytes, by stacked GGUF tensor and expert, written after the loop.
  struct Stacked {
    std::vector<uint64_t> dims;  // one expert's, innermost first
    std::map<int64_t, std::string> experts;
  };
  std::map<std::string, Stacked> stacked;
  std::vector<SyntheticTensor> twin;
  for (const std::string& name : (*ckpt)->names()) {
    const TensorInfo* t = (*ckpt)->find(name);
    const std::vector<float> values = f32_values(*t);
    const int64_t rows = t->shape[0];
    const int64_t cols = t->shape.size() == 2 ? t->shape[1] : 1;
    const bool is_q = name.find("self_attn.q_proj.") != std::string::npos;
    const bool is_k = name.find("self_attn.k_proj.") != std::string::npos;
    const int64_t heads = arch != "llama" ? 0
                          : is_q          ? c.num_attention_heads
                          : is_k          ? c.num_key_value_heads
                                          : 0;

    // The file holds the rows in llama.cpp's order; `decoded` is what they decode to.
    const std::vector<float> file_rows =
        heads > 0 ? llama_cpp_permute(values, rows, cols, heads) : values;
    const uint32_t stored = t->shape.size() == 2 ? type : kTypeF32;
    std::string data;
    std::vector<float> decoded = file_rows;
    if (stored == kTypeF32) data = raw_bytes(file_rows);
    if (stored == kTypeF16) {
      std::vector<uint16_t> h(file_rows.size());
      for (size_t i = 0; i < h.size(); ++i) {
        h[i] = float_to_f16(file_rows[i]);
        decoded[i] = f16_to_float(h[i]);
      }
      data = raw_bytes(h);
    }
    if (stored == kTypeQ8_0) data = quantize_q8_0(file_rows, &decoded);

    // The twin holds the decoded rows back in Hugging Face order: file row r came from the row
    // whose index llama_cpp_permute moved there.
    std::vector<float> hf_rows = decoded;
    if (heads > 0) {
      std::vector<float> index(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) index[r] = static_cast<float>(r);
      const std::vector<float> source_row = llama_cpp_permute(index, rows, 1, heads);
      for (int64_t r = 0; r < rows; ++r) {
        const auto from = static_cast<int64_t>(source_row[r]);
        std::copy_n(decoded.begin() + r * cols, cols, hf_rows.begin() + from * cols);
      }
    }
    std::vector<uint64_t> dims(t->shape.rbegin(), t->shape.rend());
    const GgufTensorRef ref = *gguf_tensor_ref(name);
    if (ref.slice >= 0) {
      stacked[ref.name].dims = dims;
      stacked[ref.name].experts[ref.slice] = data;
    } else if (name.ends_with("shared_expert_gate.weight")) {
      w.tensor(ref.name, {dims[0]}, stored, data);  // llama.cpp declares it 1-D: [H], not [1, H]
    } else {
      w.tensor(ref.name, dims, stored, data);
    }
    twin.push_back({name, "F32", t->shape, raw_bytes(hf_rows)});
  }
  for (auto& [name, parts] : stacked) {
    std::string data;
    int64_t next = 0;
    for (const auto& [expert, bytes] : parts.experts) {
      EXPECT_EQ(expert, next++) << name;  // every expert present, in order
      data += bytes;
    }
    parts.dims.push_back(parts.experts.size());
    w.tensor(name, parts.dims, type, data);
  }

  Converted out;
  out.gguf = dir.write(model + "-" + std::to_string(type) + ".gguf", w.bytes());
  out.twin = dir.path() / (model + "-twin-" + std::to_string(type));
  fs::create_directories(out.twin);
  nlohmann::json cfg = nlohmann::json::parse(read_text(src / "config.json"));
  cfg.erase("torch_dtype");
  cfg["dtype"] = "float32";  // GGUF RoPE frequencies are not bf16-rounded
  std::ofstream(out.twin / "config.json") << cfg.dump();
  std::ofstream(out.twin / "model.safetensors", std::ios::binary)
      << test_util::build_safetensors(twin, R"({"format":"pt"})");
  return out;
}

std::unique_ptr<runner::ModelRunner> make_runner(const fs::path& path,
                                                 const std::string& load_format = "auto") {
  runner::ModelRunnerOptions options;
  options.max_num_tokens = 64;
  options.max_batch_size = 4;
  options.num_kv_slots = 256;
  options.load_format = load_format;
  auto r = runner::ModelRunner::create(path, options);
  EXPECT_TRUE(r.ok()) << path << ": " << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

const std::vector<int32_t> kPrompt = {1, 17, 250, 3, 999, 42, 42, 7, 512, 100, 64, 2, 88};

struct ParityCase {
  std::string model;
  std::string arch;
  uint32_t type;
};

void PrintTo(const ParityCase& p, std::ostream* os) {
  *os << p.model << " as " << p.arch << " ggml type " << p.type;
}

class GgufParityTest : public ::testing::TestWithParam<ParityCase> {};

TEST_P(GgufParityTest, SameLogitsAsSafetensorsTwin) {
  const ParityCase& p = GetParam();
  TempDir dir;
  const Converted conv = convert_model(dir, p.model, p.arch, p.type);

  Result<ModelConfig> gc = load_model_config(conv.gguf);  // a GGUF path works here too
  ASSERT_TRUE(gc.ok()) << gc.status().to_string();
  Result<ModelConfig> tc = load_model_config(conv.twin);
  ASSERT_TRUE(tc.ok()) << tc.status().to_string();
  EXPECT_EQ(gc->architecture, tc->architecture);
  EXPECT_EQ(gc->vocab_size, tc->vocab_size);
  EXPECT_EQ(gc->head_dim, tc->head_dim);
  EXPECT_EQ(gc->num_key_value_heads, tc->num_key_value_heads);
  EXPECT_EQ(gc->tie_word_embeddings, tc->tie_word_embeddings);
  EXPECT_EQ(gc->attention_bias, tc->attention_bias);
  EXPECT_EQ(gc->o_bias, tc->o_bias);
  EXPECT_EQ(gc->qk_norm, tc->qk_norm);
  EXPECT_EQ(gc->max_position_embeddings, tc->max_position_embeddings);
  EXPECT_EQ(gc->num_experts, tc->num_experts);
  EXPECT_EQ(gc->num_experts_per_tok, tc->num_experts_per_tok);
  EXPECT_EQ(gc->moe_intermediate_size, tc->moe_intermediate_size);
  EXPECT_EQ(gc->shared_expert_intermediate_size, tc->shared_expert_intermediate_size);
  EXPECT_EQ(gc->norm_topk_prob, tc->norm_topk_prob);
  EXPECT_FLOAT_EQ(static_cast<float>(gc->rms_norm_eps), static_cast<float>(tc->rms_norm_eps));
  EXPECT_EQ(gc->torch_dtype, "float32");

  auto gguf_runner = make_runner(conv.gguf);
  auto twin_runner = make_runner(conv.twin);
  ASSERT_TRUE(gguf_runner && twin_runner);
  const int64_t vocab = gguf_runner->config().vocab_size;
  std::vector<int32_t> prompt;
  for (int32_t id : kPrompt) prompt.push_back(static_cast<int32_t>(id % vocab));
  const std::vector<float> a = prefill_logits(*gguf_runner, prompt);
  const std::vector<float> b = prefill_logits(*twin_runner, prompt);
  EXPECT_LT(max_abs_diff(a, b), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Models, GgufParityTest,
                         ::testing::Values(ParityCase{"tiny-llama", "llama", kTypeF32},
                                           ParityCase{"tiny-llama", "llama", kTypeF16},
                                           ParityCase{"tiny-llama", "llama", kTypeQ8_0},
                                           ParityCase{"tiny-llama-tied", "llama", kTypeF32},
                                           ParityCase{"stories260K", "llama", kTypeF32},
                                           ParityCase{"tiny-qwen2", "qwen2", kTypeF32},
                                           ParityCase{"tiny-qwen2", "qwen2", kTypeQ8_0},
                                           ParityCase{"tiny-qwen3", "qwen3", kTypeF32},
                                           ParityCase{"tiny-qwen3", "qwen3", kTypeF16},
                                           ParityCase{"tiny-mixtral", "llama", kTypeF32},
                                           ParityCase{"tiny-mixtral", "llama", kTypeQ8_0},
                                           ParityCase{"tiny-qwen2-moe", "qwen2moe", kTypeF32},
                                           ParityCase{"tiny-qwen2-moe", "qwen2moe", kTypeQ8_0},
                                           ParityCase{"tiny-qwen3-moe", "qwen3moe", kTypeF32},
                                           ParityCase{"tiny-qwen3-moe", "qwen3moe", kTypeF16}),
                         [](const ::testing::TestParamInfo<ParityCase>& info) {
                           std::string name =
                               info.param.model + "_" + std::to_string(info.param.type);
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

// ---- attention biases ----

struct F32Tensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};
using F32Tensors = std::map<std::string, F32Tensor>;

// Writes `tensors` as a float32 checkpoint with tiny-llama's config (attention_bias as given)
// into <dir>/<name>.
fs::path write_llama_variant(const TempDir& dir, const std::string& name, const F32Tensors& tensors,
                             bool attention_bias) {
  const fs::path to = dir.path() / name;
  fs::create_directories(to);
  nlohmann::json cfg =
      nlohmann::json::parse(read_text(testdata_models_dir() / "tiny-llama" / "config.json"));
  cfg.erase("torch_dtype");
  cfg["dtype"] = "float32";
  cfg["attention_bias"] = attention_bias;
  std::ofstream(to / "config.json") << cfg.dump();
  std::vector<SyntheticTensor> out;
  for (const auto& [n, t] : tensors) out.push_back({n, "F32", t.shape, raw_bytes(t.values)});
  std::ofstream(to / "model.safetensors", std::ios::binary)
      << test_util::build_safetensors(out, R"({"format":"pt"})");
  return to;
}

// transformers' Llama with attention_bias adds o_proj.bias once to the o projection's output.
// A v bias c moves each head's attention output by c (its softmax weights sum to 1), so the o
// projection's output by W_o c: tiny-llama with o bias W_o c computes what it computes with v
// bias c, and not what it computes without. The same holds through GGUF (attn_output.bias).
TEST(AttentionBiasTest, OBiasIsAddedOnceToTheOProjection) {
  const fs::path src = testdata_models_dir() / "tiny-llama";
  Result<ModelConfig> config = load_model_config(src);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  const ModelConfig& c = *config;
  Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(src);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  F32Tensors plain;
  for (const std::string& name : (*ckpt)->names()) {
    const TensorInfo* t = (*ckpt)->find(name);
    plain[name] = {t->shape, f32_values(*t)};
  }

  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  const int64_t d = c.head_dim, q_rows = c.q_size(), kv_rows = c.kv_size(), h = c.hidden_size;
  const int64_t group = c.num_attention_heads / c.num_key_value_heads;
  F32Tensors via_v = plain, via_o = plain, no_o = plain;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".self_attn.";
    std::vector<float> v_bias(kv_rows), o_bias(h, 0.f);
    for (float& x : v_bias) x = dist(rng);
    const std::vector<float>& wo = plain[p + "o_proj.weight"].values;  // [h, q_rows]
    for (int64_t i = 0; i < h; ++i) {
      double sum = 0;  // column j reads q head j / d, whose KV head is (j / d) / group
      for (int64_t j = 0; j < q_rows; ++j)
        sum += wo[i * q_rows + j] * v_bias[j / d / group * d + j % d];
      o_bias[i] = static_cast<float>(sum);
    }
    const F32Tensor zero_q{{q_rows}, std::vector<float>(q_rows, 0.f)};
    const F32Tensor zero_kv{{kv_rows}, std::vector<float>(kv_rows, 0.f)};
    for (F32Tensors* m : {&via_v, &via_o, &no_o}) {
      (*m)[p + "q_proj.bias"] = zero_q;
      (*m)[p + "k_proj.bias"] = zero_kv;
      (*m)[p + "v_proj.bias"] = m == &via_v ? F32Tensor{{kv_rows}, v_bias} : zero_kv;
    }
    via_v[p + "o_proj.bias"] = {{h}, std::vector<float>(h, 0.f)};
    via_o[p + "o_proj.bias"] = {{h}, o_bias};
  }
  TempDir dir;
  const fs::path o_dir = write_llama_variant(dir, "via_o", via_o, true);
  auto plain_runner = make_runner(write_llama_variant(dir, "plain", plain, false));
  auto v_runner = make_runner(write_llama_variant(dir, "via_v", via_v, true));
  auto o_runner = make_runner(o_dir);
  ASSERT_TRUE(plain_runner && v_runner && o_runner);
  EXPECT_TRUE(o_runner->config().o_bias);
  const std::vector<float> with_o = prefill_logits(*o_runner, kPrompt);
  EXPECT_LT(max_abs_diff(with_o, prefill_logits(*v_runner, kPrompt)), 1e-4);
  EXPECT_GT(max_abs_diff(with_o, prefill_logits(*plain_runner, kPrompt)), 0.1);

  // The GGUF conversion reads the bias from attn_output.bias.
  const Converted conv = convert_model(dir, "via_o", "llama", kTypeF32, o_dir);
  auto gguf_runner = make_runner(conv.gguf);
  ASSERT_TRUE(gguf_runner);
  EXPECT_TRUE(gguf_runner->config().o_bias);
  EXPECT_LT(max_abs_diff(with_o, prefill_logits(*gguf_runner, kPrompt)), 1e-4);

  // attention_bias without o_proj.bias in the checkpoint names the missing tensor.
  runner::ModelRunnerOptions options;
  options.max_num_tokens = 64;
  options.max_batch_size = 4;
  options.num_kv_slots = 256;
  expect_status(
      runner::ModelRunner::create(write_llama_variant(dir, "no_o", no_o, true), options).status(),
      StatusCode::kNotFound, {"model.layers.0.self_attn.o_proj.bias", "missing"});
}

// A test model converted to GGUF with 2-D tensors as `type`, served at tp x ep.
struct GgufTpCase {
  const char* model;
  const char* arch;
  uint32_t type;
  int tp;
  int ep = 1;
};

// Tensor parallelism over GGUF: each rank stages only its slices of the stored (quantized) rows,
// the llama q/k rows un-permuted and each stacked expert cut again by the shard; every rank's
// logits equal one rank's (the all-reduces' summation order aside). With --ep-size each rank
// stages only its experts' slices of the stacked tensors (whole experts at ep = tp:
// tiny-qwen2-moe's Q8_0 experts load at tp 4, which the block rule refuses without ep).
TEST(GgufModelTest, TensorParallelRanksEqualOneRank) {
  using Case = GgufTpCase;
  for (const Case& c :
       {Case{"tiny-llama", "llama", kTypeQ8_0, 2}, Case{"tiny-mixtral", "llama", kTypeQ8_0, 2},
        Case{"tiny-qwen3-moe", "qwen3moe", kTypeF16, 4},
        Case{"tiny-mixtral", "llama", kTypeQ8_0, 2, 2},
        Case{"tiny-qwen2-moe", "qwen2moe", kTypeQ8_0, 4, 4},
        Case{"tiny-qwen3-moe", "qwen3moe", kTypeF16, 4, 2}}) {
    TempDir dir;
    const Converted conv = convert_model(dir, c.model, c.arch, c.type);
    auto one = make_runner(conv.gguf);
    ASSERT_TRUE(one);
    const std::vector<float> ref = prefill_logits(*one, kPrompt);
    std::vector<std::vector<float>> ranks(static_cast<size_t>(c.tp));
    ::sgl::test::run_ranks(c.tp, [&](int rank, distributed::Communicator& comm) {
      runner::ModelRunnerOptions options;
      options.max_num_tokens = 64;
      options.max_batch_size = 4;
      options.num_kv_slots = 256;
      options.tp_size = c.tp;
      options.ep_size = c.ep;
      auto runner = runner::ModelRunner::create(conv.gguf, options, &comm);
      ASSERT_TRUE(runner.ok()) << runner.status().to_string();  // on every rank alike
      ranks[static_cast<size_t>(rank)] = prefill_logits(**runner, kPrompt);
    });
    for (int r = 0; r < c.tp; ++r) {
      EXPECT_LT(max_abs_diff(ranks[static_cast<size_t>(r)], ref), 1e-4)
          << c.model << " tp " << c.tp << " ep " << c.ep << " rank " << r;
    }
  }
}

// Each rank reads only its slices of a GGUF file's tensors (counted in stored bytes: its rows of
// the quantized blocks, its columns at whole blocks, its experts of the stacked ones, whole KV
// heads shared by ranks), as from safetensors (tensor_parallel_load_test).
TEST(GgufModelTest, EachRankReadsOnlyItsShard) {
  using Case = GgufTpCase;
  for (const Case& c :
       {Case{"tiny-llama", "llama", kTypeQ8_0, 2}, Case{"tiny-qwen3-moe", "qwen3moe", kTypeF16, 4},
        Case{"tiny-qwen2-moe", "qwen2moe", kTypeQ8_0, 4, 4},
        Case{"tiny-mixtral", "llama", kTypeQ8_0, 2, 2}}) {
    TempDir dir;
    const Converted conv = convert_model(dir, c.model, c.arch, c.type);
    auto source = open_model_source(conv.gguf, {.open_weights = true});
    ASSERT_TRUE(source.ok()) << source.status().to_string();
    uint64_t whole = 0;
    for (const std::string& name : source->weights->names()) {
      whole += *source->weights->stored_nbytes(name);
    }
    CpuAllocator allocator;
    for (int rank = 0; rank < c.tp; ++rank) {
      uint64_t expected = 0;
      for (const std::string& name : source->weights->names()) {
        expected += expected_ep_bytes(name, *source->weights->stored_nbytes(name), source->config,
                                      rank, c.tp, c.ep);
      }
      WeightLoader weights(source->weights.get(), allocator, DType::kF32, backend::Stream::cpu());
      ModelOptions options;
      options.max_num_tokens = 16;
      options.max_logit_rows = 4;
      options.tp = {rank, c.tp};
      options.ep_size = c.ep;
      auto m = create_model(source->config, weights, allocator, options);
      ASSERT_TRUE(m.ok()) << m.status().to_string();
      EXPECT_EQ(weights.bytes_read(), expected)
          << c.model << " rank " << rank << " of tp " << c.tp << " ep " << c.ep;
      EXPECT_LT(weights.bytes_read(), whole * 3 / 4) << c.model;
    }
  }
}

// A shard that would cut a quant block (tiny-qwen2-moe's experts are 64 wide: 16 columns per
// rank at tp 4, Q8_0 blocks hold 32) is refused when the model is checked, naming the tensor.
TEST(GgufModelTest, TensorParallelShardSplittingABlockIsRefused) {
  TempDir dir;
  const Converted conv = convert_model(dir, "tiny-qwen2-moe", "qwen2moe", kTypeQ8_0);
  distributed::SharedMemoryGroup group(4);
  auto comm = group.communicator(0);
  runner::ModelRunnerOptions options;
  options.num_kv_slots = 256;
  options.tp_size = 4;
  auto runner = runner::ModelRunner::create(conv.gguf, options, comm.get());
  expect_status(runner.status(), StatusCode::kInvalidArgument,
                {"down_proj.weight", "blocks of 32", "splits a block", "--tp-size"});
}

// stories260K is f32 with a float32 config: its GGUF must match the original checkpoint itself
// (which golden_parity_test checks against transformers).
TEST(GgufModelTest, Stories260KMatchesOriginal) {
  TempDir dir;
  const Converted conv = convert_model(dir, "stories260K", "llama", kTypeF32);
  auto gguf_runner = make_runner(conv.gguf);
  auto original = make_runner(testdata_models_dir() / "stories260K");
  ASSERT_TRUE(gguf_runner && original);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 268, 1004 % 512, 9, 33};
  EXPECT_LT(max_abs_diff(prefill_logits(*gguf_runner, prompt), prefill_logits(*original, prompt)),
            1e-5);
}

// The un-permute is what the parity above rests on: read as a family llama.cpp does not permute,
// the same file gives interleaved q rows (and identical v rows).
TEST(GgufModelTest, UnpermuteAppliesToLlamaQkOnly) {
  TempDir dir;
  const Converted conv = convert_model(dir, "tiny-llama", "llama", kTypeF32);
  Result<GgufFile> f = GgufFile::open(conv.gguf);
  ASSERT_TRUE(f.ok());
  Result<ModelConfig> c = model_config_from_gguf(*f);
  ASSERT_TRUE(c.ok());
  ModelConfig as_qwen = *c;
  as_qwen.model_type = "qwen3";
  GgufWeightSource unpermuted(std::move(f).value(), *c);
  Result<GgufFile> f2 = GgufFile::open(conv.gguf);
  ASSERT_TRUE(f2.ok());
  GgufWeightSource raw(std::move(f2).value(), as_qwen);
  const std::string q = "model.layers.0.self_attn.q_proj.weight";
  const std::vector<int64_t> shape = {c->q_size(), c->hidden_size};
  std::vector<float> a(static_cast<size_t>(c->q_size() * c->hidden_size)), b(a.size());
  ASSERT_TRUE(unpermuted.read_f32(q, shape, a.data()).ok());
  ASSERT_TRUE(raw.read_f32(q, shape, b.data()).ok());
  EXPECT_NE(a, b);
  std::vector<float> expect(a.size());
  permute_rows_to_rotate_half(b.data(), c->q_size(), c->hidden_size, c->num_attention_heads,
                              expect.data());
  EXPECT_EQ(a, expect);
  // v is never permuted.
  const std::string v = "model.layers.1.self_attn.v_proj.weight";
  const std::vector<int64_t> vshape = {c->kv_size(), c->hidden_size};
  std::vector<float> va(static_cast<size_t>(c->kv_size() * c->hidden_size)), vb(va.size());
  ASSERT_TRUE(unpermuted.read_f32(v, vshape, va.data()).ok());
  ASSERT_TRUE(raw.read_f32(v, vshape, vb.data()).ok());
  EXPECT_EQ(va, vb);
}

// What the loader uploads from stored() (rows gathered in row_order, converted where they land)
// is what read_f32 returns, for every tensor, stored as F32, F16 or Q8_0, q/k un-permuted.
TEST(GgufModelTest, StoredRowsEqualReadF32) {
  TempDir dir;
  for (const uint32_t type : {kTypeF32, kTypeF16, kTypeQ8_0}) {
    const Converted conv = convert_model(dir, "tiny-llama", "llama", type);
    Result<GgufFile> f = GgufFile::open(conv.gguf);
    ASSERT_TRUE(f.ok());
    Result<ModelConfig> c = model_config_from_gguf(*f);
    ASSERT_TRUE(c.ok());
    GgufWeightSource source(std::move(f).value(), *c);
    int permuted = 0;
    for (const std::string& name : source.names()) {
      SCOPED_TRACE(name + " type " + std::to_string(type));
      const std::vector<int64_t> shape = *source.shape(name);
      auto stored = source.stored(name, shape);
      ASSERT_TRUE(stored.ok()) << stored.status().to_string();
      ASSERT_TRUE(stored->has_value());
      const StoredTensor& t = **stored;
      permuted += t.row_order.empty() ? 0 : 1;
      std::vector<uint8_t> gathered(t.nbytes());
      for (int64_t r = 0; r < t.rows; ++r) {
        const int64_t from = t.row_order.empty() ? r : t.row_order[r];
        std::memcpy(gathered.data() + r * t.row_bytes, t.data + from * t.row_bytes, t.row_bytes);
      }
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      std::vector<float> got(static_cast<size_t>(n)), expect(got.size());
      kernels::convert_stored(gathered.data(), t.format, Tensor(got.data(), DType::kF32, {n}),
                              backend::Stream{});
      ASSERT_TRUE(source.read_f32(name, shape, expect.data()).ok());
      EXPECT_EQ(got, expect);
    }
    EXPECT_EQ(permuted, 2 * c->num_hidden_layers);  // every q and k projection
  }
}

// Every block-quantized type goes to the loader as stored bytes (converted where they land),
// q/k rows included: the rows gathered in row_order and converted equal read_f32, which
// dequantizes first and un-permutes f32 rows after. A 1-D quantized tensor, whose rows are
// single values, is read as f32 instead.
TEST(GgufModelTest, EveryQuantizedTypeIsStoredWithUnpermutedRows) {
  using kernels::StoredFormat;
  struct Case {
    std::string hf_name;
    std::vector<int64_t> shape;
    GgmlType type;
  };
  // hidden 256 (one k-quant super-block per row), 4 heads and 2 KV heads of 64.
  const std::vector<Case> cases = {
      {"model.embed_tokens.weight", {8, 256}, GgmlType::kQ4_0},
      {"model.layers.0.self_attn.q_proj.weight", {256, 256}, GgmlType::kQ4_K},
      {"model.layers.0.self_attn.k_proj.weight", {128, 256}, GgmlType::kQ5_K},
      {"model.layers.0.self_attn.v_proj.weight", {128, 256}, GgmlType::kQ6_K},
      {"model.layers.0.self_attn.o_proj.weight", {256, 256}, GgmlType::kQ2_K},
      {"model.layers.0.mlp.gate_proj.weight", {64, 256}, GgmlType::kQ3_K},
      {"model.layers.0.mlp.up_proj.weight", {64, 256}, GgmlType::kQ4_1},
      {"model.layers.0.mlp.down_proj.weight", {256, 64}, GgmlType::kQ5_1},
      {"model.layers.1.self_attn.q_proj.weight", {256, 256}, GgmlType::kQ5_0},
      {"model.layers.1.self_attn.k_proj.weight", {128, 256}, GgmlType::kQ8_0},
      {"lm_head.weight", {8, 256}, GgmlType::kQ6_K},
      {"model.layers.0.input_layernorm.weight", {256}, GgmlType::kQ8_0},  // 1-D
      {"model.norm.weight", {256}, GgmlType::kF32},
  };
  std::mt19937 rng(17);
  GgufWriter w;
  w.kv("general.architecture", gguf_string("llama"));
  for (const Case& c : cases) {
    const auto format = *stored_format(c.type);
    int64_t n = 1;
    for (int64_t d : c.shape) n *= d;
    const std::vector<uint8_t> bytes = kernels::test::random_stored(format, n, rng);
    w.tensor(*gguf_tensor_name(c.hf_name), std::vector<uint64_t>(c.shape.rbegin(), c.shape.rend()),
             static_cast<uint32_t>(c.type), std::string(bytes.begin(), bytes.end()));
  }
  TempDir dir;
  Result<GgufFile> f = GgufFile::open(dir.write("quantized.gguf", w.bytes()));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ModelConfig config;
  config.model_type = "llama";
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  GgufWeightSource source(std::move(f).value(), config);
  int permuted = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.hf_name);
    int64_t n = 1;
    for (int64_t d : c.shape) n *= d;
    std::vector<float> expect(static_cast<size_t>(n));
    ASSERT_TRUE(source.read_f32(c.hf_name, c.shape, expect.data()).ok());
    auto stored = source.stored(c.hf_name, c.shape);
    ASSERT_TRUE(stored.ok()) << stored.status().to_string();
    if (c.shape.size() == 1 && c.type != GgmlType::kF32) {
      EXPECT_FALSE(stored->has_value());
      continue;
    }
    ASSERT_TRUE(stored->has_value());
    const StoredTensor& t = **stored;
    EXPECT_EQ(t.format, *stored_format(c.type));
    EXPECT_EQ(t.rows, c.shape[0]);
    permuted += t.row_order.empty() ? 0 : 1;
    std::vector<uint8_t> gathered(t.nbytes());
    for (int64_t r = 0; r < t.rows; ++r) {
      const int64_t from = t.row_order.empty() ? r : t.row_order[r];
      std::memcpy(gathered.data() + r * t.row_bytes, t.data + from * t.row_bytes, t.row_bytes);
    }
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      Buffer got(cpu_allocator(), dtype, {n});
      kernels::convert_stored(gathered.data(), t.format, got, backend::Stream::cpu());
      for (int64_t i = 0; i < n; ++i) {
        const float v = dtype == DType::kF32
                            ? got.data<float>()[i]
                            : bf16_to_float(static_cast<uint16_t*>(got.tensor().raw())[i]);
        const float e = dtype == DType::kF32 ? expect[i] : bf16_to_float(float_to_bf16(expect[i]));
        ASSERT_EQ(v, e) << dtype_name(dtype) << " value " << i;
      }
    }
  }
  EXPECT_EQ(permuted, 4);  // both layers' q and k
}

// ---- config from metadata ----

// Metadata of a minimal model: the keys llama.cpp writes for `arch`.
using Kvs = std::vector<std::pair<std::string, test_util::GgufRawValue>>;
Kvs minimal_kvs(const std::string& arch = "llama") {
  return {{"general.architecture", gguf_string(arch)},
          {arch + ".context_length", gguf_u32(2048)},
          {arch + ".embedding_length", gguf_u32(64)},
          {arch + ".block_count", gguf_u32(2)},
          {arch + ".feed_forward_length", gguf_u32(128)},
          {arch + ".attention.head_count", gguf_u32(4)},
          {arch + ".attention.head_count_kv", gguf_u32(2)},
          {arch + ".rope.freq_base", gguf_f32(500000.0f)},
          {arch + ".attention.layer_norm_rms_epsilon", gguf_f32(1e-5f)},
          {"tokenizer.ggml.bos_token_id", gguf_u32(5)},
          {"tokenizer.ggml.eos_token_id", gguf_u32(6)},
          {"tokenizer.ggml.eot_token_id", gguf_u32(7)}};
}

// `kvs` with `key` set to `value` (added when absent), or removed when `value` is nullopt.
Kvs with(Kvs kvs, const std::string& key, std::optional<test_util::GgufRawValue> value) {
  auto it = std::find_if(kvs.begin(), kvs.end(), [&](const auto& kv) { return kv.first == key; });
  if (!value) {
    if (it != kvs.end()) kvs.erase(it);
  } else if (it != kvs.end()) {
    it->second = *value;
  } else {
    kvs.emplace_back(key, *value);
  }
  return kvs;
}

// A GGUF of `kvs` and a token_embd of [vocab 8, hidden 64].
GgufWriter model_writer(const Kvs& kvs) {
  GgufWriter w;
  for (const auto& [k, v] : kvs) w.kv(k, v);
  w.tensor("token_embd.weight", {64, 8}, kTypeF32, std::string(64 * 8 * 4, '\0'));
  return w;
}

GgufWriter minimal_llama(const std::string& arch = "llama") {
  return model_writer(minimal_kvs(arch));
}

TEST(GgufConfigTest, LlamaKeys) {
  TempDir dir;
  const fs::path p = dir.write("m.gguf", minimal_llama().bytes());
  Result<ModelConfig> c = load_gguf_model_config(p);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->architecture, "LlamaForCausalLM");
  EXPECT_EQ(c->model_type, "llama");
  EXPECT_EQ(c->max_position_embeddings, 2048);
  EXPECT_EQ(c->hidden_size, 64);
  EXPECT_EQ(c->num_hidden_layers, 2);
  EXPECT_EQ(c->intermediate_size, 128);
  EXPECT_EQ(c->num_attention_heads, 4);
  EXPECT_EQ(c->num_key_value_heads, 2);
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->vocab_size, 8);
  EXPECT_EQ(c->rope_theta, 500000.0);
  EXPECT_FLOAT_EQ(static_cast<float>(c->rms_norm_eps), 1e-5f);
  EXPECT_TRUE(c->tie_word_embeddings);  // no output.weight
  EXPECT_FALSE(c->attention_bias);
  EXPECT_FALSE(c->qk_norm);
  EXPECT_EQ(c->bos_token_id, 5);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{6, 7}));
  EXPECT_EQ(c->torch_dtype, "float32");
  EXPECT_EQ(c->hidden_act, "silu");

  // The same through load_model_config and open_model_source (config only).
  EXPECT_TRUE(load_model_config(p).ok());
  Result<ModelSource> src = open_model_source(p, {.open_weights = false});
  ASSERT_TRUE(src.ok()) << src.status().to_string();
  EXPECT_EQ(src->format, ModelFormat::kGguf);
  EXPECT_EQ(src->weights, nullptr);
  EXPECT_EQ(src->config.hidden_size, 64);
}

TEST(GgufConfigTest, QwenFamiliesAndOptionalKeys) {
  TempDir dir;
  GgufWriter q2 = minimal_llama("qwen2");
  q2.tensor("output.weight", {64, 8}, kTypeF32, std::string(64 * 8 * 4, '\0'));
  Result<ModelConfig> c2 = load_gguf_model_config(dir.write("q2.gguf", q2.bytes()));
  ASSERT_TRUE(c2.ok()) << c2.status().to_string();
  EXPECT_EQ(c2->architecture, "Qwen2ForCausalLM");
  EXPECT_TRUE(c2->attention_bias);
  EXPECT_FALSE(c2->tie_word_embeddings);

  GgufWriter q3 = minimal_llama("qwen3");
  q3.kv("qwen3.attention.key_length", gguf_u32(24)).kv("qwen3.vocab_size", gguf_u32(8));
  Result<ModelConfig> c3 = load_gguf_model_config(dir.write("q3.gguf", q3.bytes()));
  ASSERT_TRUE(c3.ok()) << c3.status().to_string();
  EXPECT_EQ(c3->architecture, "Qwen3ForCausalLM");
  EXPECT_EQ(c3->head_dim, 24);  // key_length wins over hidden / heads
  EXPECT_TRUE(c3->qk_norm);
  EXPECT_FALSE(c3->attention_bias);

  // head_count_kv and freq_base are optional; a Llama with q biases has attention_bias.
  GgufWriter bare;
  bare.kv("general.architecture", gguf_string("llama"))
      .kv("llama.context_length", gguf_u32(16))
      .kv("llama.embedding_length", gguf_u32(32))
      .kv("llama.block_count", gguf_u32(1))
      .kv("llama.feed_forward_length", gguf_u32(32))
      .kv("llama.attention.head_count", gguf_u32(2))
      .kv("llama.attention.layer_norm_rms_epsilon", gguf_f32(1e-6f))
      .tensor("token_embd.weight", {32, 3}, kTypeF32, std::string(32 * 3 * 4, '\0'))
      .tensor("blk.0.attn_q.bias", {32}, kTypeF32, std::string(32 * 4, '\0'));
  Result<ModelConfig> cb = load_gguf_model_config(dir.write("bare.gguf", bare.bytes()));
  ASSERT_TRUE(cb.ok()) << cb.status().to_string();
  EXPECT_EQ(cb->num_key_value_heads, 2);
  EXPECT_EQ(cb->rope_theta, 10000.0);
  EXPECT_TRUE(cb->attention_bias);
  EXPECT_EQ(cb->bos_token_id, -1);
  EXPECT_TRUE(cb->eos_token_ids.empty());
}

// MoE files: "llama" with expert_count is Mixtral; qwen2moe / qwen3moe read their expert sizes,
// renormalize as llama.cpp does unless expert_weights_norm says otherwise, and refuse what we
// cannot run.
TEST(GgufConfigTest, MixtureOfExpertsKeys) {
  TempDir dir;
  auto load = [&](const Kvs& kvs) {
    return load_gguf_model_config(dir.write("moe.gguf", model_writer(kvs).bytes()));
  };
  Kvs mixtral = with(minimal_kvs("llama"), "llama.expert_count", gguf_u32(8));
  mixtral = with(mixtral, "llama.expert_used_count", gguf_u32(2));
  Result<ModelConfig> m = load(mixtral);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->architecture, "MixtralForCausalLM");
  EXPECT_EQ(m->num_experts, 8);
  EXPECT_EQ(m->num_experts_per_tok, 2);
  EXPECT_EQ(m->moe_intermediate_size, 128);  // feed_forward_length
  EXPECT_TRUE(m->norm_topk_prob);
  EXPECT_TRUE(m->is_sparse_layer(0) && m->is_sparse_layer(1));

  auto qwen = [](const std::string& arch) {
    Kvs kvs = with(minimal_kvs(arch), arch + ".expert_count", gguf_u32(16));
    kvs = with(kvs, arch + ".expert_used_count", gguf_u32(4));
    return with(kvs, arch + ".expert_feed_forward_length", gguf_u32(32));
  };
  Result<ModelConfig> q3 = load(qwen("qwen3moe"));
  ASSERT_TRUE(q3.ok()) << q3.status().to_string();
  EXPECT_EQ(q3->architecture, "Qwen3MoeForCausalLM");
  EXPECT_EQ(q3->moe_intermediate_size, 32);
  EXPECT_EQ(q3->intermediate_size, 128);
  EXPECT_TRUE(q3->norm_topk_prob);
  EXPECT_TRUE(q3->qk_norm);
  EXPECT_EQ(q3->shared_expert_intermediate_size, 0);
  Result<ModelConfig> q3n =
      load(with(qwen("qwen3moe"), "qwen3moe.expert_weights_norm", gguf_bool(false)));
  ASSERT_TRUE(q3n.ok()) << q3n.status().to_string();
  EXPECT_FALSE(q3n->norm_topk_prob);

  const Kvs q2 = with(qwen("qwen2moe"), "qwen2moe.expert_shared_feed_forward_length", gguf_u32(48));
  Result<ModelConfig> c2 = load(q2);
  ASSERT_TRUE(c2.ok()) << c2.status().to_string();
  EXPECT_EQ(c2->architecture, "Qwen2MoeForCausalLM");
  EXPECT_FALSE(c2->norm_topk_prob);
  EXPECT_TRUE(c2->attention_bias);
  EXPECT_EQ(c2->shared_expert_intermediate_size, 48);

  using test_util::expect_status;
  expect_status(load(with(q2, "qwen2moe.expert_shared_feed_forward_length", std::nullopt)).status(),
                StatusCode::kNotFound, {"qwen2moe.expert_shared_feed_forward_length"});
  expect_status(load(with(qwen("qwen3moe"), "qwen3moe.expert_used_count", std::nullopt)).status(),
                StatusCode::kNotFound, {"qwen3moe.expert_used_count"});
  expect_status(load(with(qwen("qwen3moe"), "qwen3moe.expert_used_count", gguf_u32(17))).status(),
                StatusCode::kInvalidArgument, {"qwen3moe.expert_used_count", "17"});
  expect_status(load(with(qwen("qwen3moe"), "qwen3moe.expert_count", gguf_u32(100000))).status(),
                StatusCode::kInvalidArgument, {"qwen3moe.expert_count"});
  expect_status(load(with(qwen("qwen3moe"), "qwen3moe.expert_gating_func", gguf_u32(2))).status(),
                StatusCode::kUnimplemented, {"expert_gating_func", "softmax"});
  expect_status(load(with(qwen("qwen3moe"), "qwen3moe.expert_count", std::nullopt)).status(),
                StatusCode::kUnimplemented, {"'qwen3moe' without experts", "qwen3moe"});
  expect_status(load(with(minimal_kvs("qwen3"), "qwen3.expert_count", gguf_u32(8))).status(),
                StatusCode::kUnimplemented, {"'qwen3' with experts"});
}

TEST(GgufConfigTest, Errors) {
  TempDir dir;
  auto expect_error = [&](const GgufWriter& w, StatusCode code,
                          std::vector<std::string> substrings) {
    const fs::path p = dir.write("bad.gguf", w.bytes());
    substrings.push_back("bad.gguf");
    expect_status(load_gguf_model_config(p).status(), code, substrings);
  };
  const Kvs base = minimal_kvs();
  expect_error(model_writer(with(base, "general.architecture", std::nullopt)),
               StatusCode::kNotFound, {"'general.architecture'", "missing"});
  expect_error(minimal_llama("gpt2"), StatusCode::kUnimplemented,
               {"architecture 'gpt2'", "supported: llama, qwen2, qwen3"});
  expect_error(model_writer(with(base, "general.architecture", gguf_u32(1))), StatusCode::kDataLoss,
               {"'general.architecture'", "uint32"});
  expect_error(model_writer(with(base, "llama.block_count", std::nullopt)), StatusCode::kNotFound,
               {"'llama.block_count'", "missing"});
  expect_error(model_writer(with(base, "llama.embedding_length", gguf_string("64"))),
               StatusCode::kDataLoss, {"'llama.embedding_length'", "string"});
  expect_error(model_writer(with(base, "llama.block_count", gguf_u32(0))), StatusCode::kDataLoss,
               {"'llama.block_count'", "positive"});
  expect_error(model_writer(with(base, "llama.attention.head_count_kv", gguf_u32(3))),
               StatusCode::kDataLoss, {"head_count_kv", "(3) must divide"});
  expect_error(model_writer(with(base, "llama.attention.head_count", gguf_i32_array({4, 4}))),
               StatusCode::kUnimplemented, {"'llama.attention.head_count'", "per-layer"});
  expect_error(model_writer(with(with(base, "llama.attention.head_count", gguf_u32(5)),
                                 "llama.attention.head_count_kv", std::nullopt)),
               StatusCode::kDataLoss, {"not divisible", "key_length"});
  expect_error(model_writer(with(base, "llama.attention.layer_norm_rms_epsilon", std::nullopt)),
               StatusCode::kNotFound, {"layer_norm_rms_epsilon"});
  expect_error(model_writer(with(base, "llama.rope.freq_base", gguf_f32(-1.0f))),
               StatusCode::kDataLoss, {"'llama.rope.freq_base'", "positive"});
  expect_error(model_writer(with(base, "llama.rope.dimension_count", gguf_u32(8))),
               StatusCode::kUnimplemented, {"rope.dimension_count", "partial rotary"});
  expect_error(model_writer(with(base, "llama.rope.scaling.type", gguf_string("yarn"))),
               StatusCode::kUnimplemented, {"'llama.rope.scaling.type'", "'yarn'"});
  expect_error(model_writer(with(base, "llama.vocab_size", gguf_u32(9))), StatusCode::kDataLoss,
               {"llama.vocab_size 9", "token_embd.weight rows 8"});
  expect_error(model_writer(with(base, "tokenizer.ggml.eos_token_id", test_util::gguf_i32(-2))),
               StatusCode::kDataLoss, {"eos_token_id", "out-of-range"});
  GgufWriter freqs = minimal_llama();
  freqs.tensor("rope_freqs.weight", {8}, kTypeF32, std::string(32, '\0'));
  expect_error(freqs, StatusCode::kUnimplemented, {"rope_freqs.weight"});
  GgufWriter no_embd;
  for (const auto& [k, v] : base) no_embd.kv(k, v);
  expect_error(no_embd, StatusCode::kNotFound, {"'token_embd.weight' is missing"});
  GgufWriter bad_embd;
  for (const auto& [k, v] : base) bad_embd.kv(k, v);
  bad_embd.tensor("token_embd.weight", {32, 8}, kTypeF32, std::string(32 * 8 * 4, '\0'));
  expect_error(bad_embd, StatusCode::kDataLoss, {"token_embd.weight", "[8, 32]", "[vocab, 64]"});
}

// RoPE scaling as llama.cpp reads it: without rope.scaling.type the factor (rope.scaling.factor,
// or the older rope.scale_linear) scales linearly unless it is 0 or 1; only "none" ignores it.
TEST(GgufConfigTest, LinearRopeScalingIsRefused) {
  TempDir dir;
  auto load = [&](const Kvs& kvs) {
    return load_gguf_model_config(dir.write("rope.gguf", model_writer(kvs).bytes())).status();
  };
  const Kvs base = minimal_kvs();
  for (const char* key : {"llama.rope.scaling.factor", "llama.rope.scale_linear"}) {
    SCOPED_TRACE(key);
    expect_status(load(with(base, key, gguf_f32(4.0f))), StatusCode::kUnimplemented,
                  {"rope.gguf", std::string("'") + key + "' is 4", "linear RoPE scaling",
                   "without llama.rope.scaling.type"});
    const Kvs linear = with(base, "llama.rope.scaling.type", gguf_string("linear"));
    expect_status(load(with(linear, key, gguf_f32(2.0f))), StatusCode::kUnimplemented,
                  {std::string("'") + key + "' is 2"});
    EXPECT_TRUE(load(with(base, key, gguf_f32(1.0f))).ok());
    EXPECT_TRUE(load(with(base, key, gguf_f32(0.0f))).ok());
    EXPECT_TRUE(load(with(linear, key, gguf_f32(1.0f))).ok());
    // An explicit "none" turns the factor off in llama.cpp.
    const Kvs none = with(base, "llama.rope.scaling.type", gguf_string("none"));
    EXPECT_TRUE(load(with(none, key, gguf_f32(4.0f))).ok());
  }
  EXPECT_TRUE(load(with(base, "llama.rope.scaling.type", gguf_string("linear"))).ok());
  // The older key counts only without rope.scaling.factor (llama.cpp's order).
  EXPECT_TRUE(load(with(with(base, "llama.rope.scaling.factor", gguf_f32(1.0f)),
                        "llama.rope.scale_linear", gguf_f32(4.0f)))
                  .ok());
}

// Which biases a GGUF has follows its tensors: blk.0.attn_output.bias is the o bias; biases on
// the MLP projections are refused (DenseMlp has none).
TEST(GgufConfigTest, BiasesFollowTheTensors) {
  TempDir dir;
  auto load = [&](const std::string& bias) {
    GgufWriter w = minimal_llama();
    if (!bias.empty()) w.tensor(bias, {64}, kTypeF32, std::string(64 * 4, '\0'));
    return load_gguf_model_config(dir.write("bias.gguf", w.bytes()));
  };
  Result<ModelConfig> plain = load("");
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_FALSE(plain->o_bias);
  Result<ModelConfig> o = load("blk.0.attn_output.bias");
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_TRUE(o->o_bias);
  EXPECT_FALSE(o->attention_bias);
  for (const char* name : {"blk.0.ffn_gate.bias", "blk.0.ffn_up.bias", "blk.0.ffn_down.bias"}) {
    expect_status(load(name).status(), StatusCode::kUnimplemented,
                  {"bias.gguf", std::string("'") + name + "'", "MLP"});
  }
}

// The GGUF spellings of config_bounds.h: every key is bounded before anything is sized from it.
TEST(GgufConfigTest, AbsurdMetadataIsRefused) {
  TempDir dir;
  const Kvs base = minimal_kvs();
  auto expect_refused = [&](const std::string& key, const test_util::GgufRawValue& value,
                            std::vector<std::string> substrings) {
    SCOPED_TRACE(key);
    const fs::path p = dir.write("absurd.gguf", model_writer(with(base, key, value)).bytes());
    substrings.push_back("absurd.gguf");
    expect_status(load_gguf_model_config(p).status(), StatusCode::kInvalidArgument, substrings);
  };
  expect_refused("llama.block_count", test_util::gguf_u64(uint64_t{1} << 31),
                 {"metadata key 'llama.block_count' is 2147483648", "maximum 1024"});
  expect_refused("llama.context_length", test_util::gguf_u64(uint64_t{1} << 31),
                 {"metadata key 'llama.context_length' is 2147483648", "maximum 16777216"});
  expect_refused("llama.feed_forward_length", test_util::gguf_u64(uint64_t{1} << 40),
                 {"'llama.feed_forward_length'", "maximum 1048576"});
  expect_refused("llama.attention.key_length", gguf_u32(1u << 20),
                 {"'llama.attention.key_length' is 1048576", "maximum 1024"});
  expect_refused("llama.attention.key_length", gguf_u32(15),
                 {"'llama.attention.key_length' is 15", "even"});
  expect_refused("llama.rope.freq_base", test_util::gguf_f64(1e30), {"'llama.rope.freq_base'"});
  expect_refused("llama.attention.layer_norm_rms_epsilon", gguf_f32(2.0f),
                 {"'llama.attention.layer_norm_rms_epsilon' is 2"});
  expect_refused("llama.attention.sliding_window", test_util::gguf_u64(uint64_t{1} << 40),
                 {"'llama.attention.sliding_window'"});
  // The embedding's width must match embedding_length whatever its size.
  const fs::path wide = dir.write(
      "wide.gguf",
      model_writer(with(base, "llama.embedding_length", test_util::gguf_u64(uint64_t{1} << 40)))
          .bytes());
  expect_status(load_gguf_model_config(wide).status(), StatusCode::kDataLoss,
                {"token_embd.weight", "expected [vocab, 1099511627776]"});
  // A sliding window is read (and refused at load unless the context fits it).
  const fs::path swa =
      dir.write("swa.gguf",
                model_writer(with(base, "llama.attention.sliding_window", gguf_u32(512))).bytes());
  Result<ModelConfig> c = load_gguf_model_config(swa);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->sliding_window, 512);
}

// ---- the weight source ----

TEST(GgufWeightSourceTest, ReadsAndErrors) {
  TempDir dir;
  GgufWriter w = minimal_llama();
  w.tensor("output_norm.weight", {64}, kTypeF16, std::string(128, '\0'))
      .tensor("blk.0.ffn_up.weight", {256, 2}, kTypeIQ2_XXS, std::string(2 * 66, '\0'))
      .tensor("rope_unused.weight", {4}, kTypeF32, std::string(16, '\0'));
  const fs::path p = dir.write("w.gguf", w.bytes());
  Result<ModelSource> src = open_model_source(p);
  ASSERT_TRUE(src.ok()) << src.status().to_string();
  ASSERT_NE(src->weights, nullptr);
  const WeightSource& ws = *src->weights;
  EXPECT_EQ(ws.describe(), p.string());
  EXPECT_EQ(ws.names(),
            (std::vector<std::string>{"model.embed_tokens.weight",
                                      "model.layers.0.mlp.up_proj.weight", "model.norm.weight"}));
  EXPECT_TRUE(ws.has("model.norm.weight"));
  EXPECT_FALSE(ws.has("lm_head.weight"));
  EXPECT_EQ(*ws.shape("model.embed_tokens.weight"), (std::vector<int64_t>{8, 64}));
  EXPECT_EQ(*ws.shape("model.layers.0.mlp.up_proj.weight"), (std::vector<int64_t>{2, 256}));

  std::vector<float> buf(512, 1.0f);
  ASSERT_TRUE(ws.read_f32("model.norm.weight", {64}, buf.data()).ok());
  EXPECT_EQ(buf[63], 0.0f);
  expect_status(ws.read_f32("lm_head.weight", {8, 64}, buf.data()), StatusCode::kNotFound,
                {"weight 'lm_head.weight'", "'output.weight'", "missing", "w.gguf"});
  expect_status(ws.shape("lm_head.weight").status(), StatusCode::kNotFound, {"lm_head.weight"});
  expect_status(ws.read_f32("model.embed_tokens.weight", {64, 8}, buf.data()),
                StatusCode::kInvalidArgument,
                {"weight 'model.embed_tokens.weight'", "'token_embd.weight'", "w.gguf",
                 "has shape [8, 64], expected [64, 8]"});
  expect_status(ws.read_f32("model.layers.0.mlp.up_proj.weight", {2, 256}, buf.data()),
                StatusCode::kUnimplemented, {"blk.0.ffn_up.weight", "IQ2_XXS"});
}

TEST(ModelSourceTest, FormatsAndErrors) {
  TempDir dir;
  Result<ModelSource> hf = open_model_source(testdata_models_dir() / "tiny-llama");
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();
  EXPECT_EQ(hf->format, ModelFormat::kHuggingFace);
  ASSERT_NE(hf->weights, nullptr);
  EXPECT_TRUE(hf->weights->has("lm_head.weight"));
  EXPECT_EQ(*hf->weights->shape("lm_head.weight"), (std::vector<int64_t>{1000, 128}));
  // The safetensors path keeps its messages.
  std::vector<float> buf(128 * 1000);
  expect_status(hf->weights->read_f32("lm_head.weight", {128, 1000}, buf.data()),
                StatusCode::kInvalidArgument,
                {"weight 'lm_head.weight' in",
                 "model.safetensors has shape [1000, 128], expected "
                 "[128, 1000]"});
  expect_status(hf->weights->read_f32("nope", {1}, buf.data()), StatusCode::kNotFound,
                {"weight 'nope' is missing from the checkpoint"});

  Result<ModelSource> config_only =
      open_model_source(testdata_models_dir() / "tiny-llama", {.open_weights = false});
  ASSERT_TRUE(config_only.ok());
  EXPECT_EQ(config_only->weights, nullptr);

  const fs::path text = dir.write("notes.txt", "hello");
  expect_status(open_model_source(text).status(), StatusCode::kInvalidArgument,
                {"notes.txt", "not a GGUF file"});
  expect_status(open_model_source(dir.path() / "absent.gguf").status(), StatusCode::kNotFound,
                {"no such file or directory: " + (dir.path() / "absent.gguf").string()});
  const fs::path truncated = dir.write("cut.gguf", minimal_llama().bytes().substr(0, 100));
  expect_status(open_model_source(truncated).status(), StatusCode::kDataLoss, {"cut.gguf"});
}

// A missing path that reads like a Hugging Face repo id says how to download it.
TEST(ModelSourceTest, HubRepoIdsAreRecognised) {
  expect_status(check_model_path("Qwen/Qwen3-8B-Instruct-no-such-local-dir").status(),
                StatusCode::kNotFound,
                {"no such file or directory: Qwen/Qwen3-8B-Instruct-no-such-local-dir",
                 "hf download Qwen/Qwen3-8B-Instruct-no-such-local-dir --local-dir DIR"});
  for (const char* id : {"meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-0.6B", "a_b/c.d"}) {
    EXPECT_TRUE(looks_like_hub_repo_id(id)) << id;
  }
  for (const char* path : {"/models/llama", "./llama/x", "models/llama/3", "llama", "a/", "/a",
                           "~/m/x", "a b/c", "org/model.gguf?"}) {
    EXPECT_FALSE(looks_like_hub_repo_id(path)) << path;
  }
}

// A directory with config.json (and a tokenizer) but no safetensors serves with dummy weights:
// scripts/gpu_serving_bench.sh builds such a directory for the Llama-3-8B shape.
TEST(ModelSourceTest, DummyWeightsFromDirectoryWithoutSafetensors) {
  TempDir dir;
  fs::copy_file(testdata_models_dir() / "tiny-llama" / "config.json", dir.path() / "config.json");
  dir.write("tokenizer_config.json", "{}");
  Result<ModelSource> config_only = open_model_source(dir.path(), {.open_weights = false});
  ASSERT_TRUE(config_only.ok()) << config_only.status().to_string();
  EXPECT_EQ(config_only->format, ModelFormat::kHuggingFace);
  EXPECT_EQ(config_only->weights, nullptr);
  EXPECT_EQ(config_only->config.vocab_size, 1000);
  EXPECT_FALSE(open_model_source(dir.path()).ok());  // real weights are required without dummy

  auto runner = make_runner(dir.path(), "dummy");
  ASSERT_TRUE(runner);
  EXPECT_EQ(prefill_logits(*runner, {1, 2, 3}).size(), 3u * 1000u);
}

TEST(GgufModelTest, DummyWeightsFromGgufConfig) {
  TempDir dir;
  const Converted conv = convert_model(dir, "tiny-qwen3", "qwen3", kTypeF32);
  auto runner = make_runner(conv.gguf, "dummy");
  ASSERT_TRUE(runner);
  EXPECT_EQ(runner->config().architecture, "Qwen3ForCausalLM");
  EXPECT_EQ(runner->config().head_dim, 48);
  EXPECT_EQ(prefill_logits(*runner, {1, 2, 3}).size(), 3u * 1000u);
}

}  // namespace
}  // namespace sgl::model
