// GGUF tensor naming, the q/k row (un)permutation, stored (device-converted) and dequantizing
// reads.
#include "model/gguf_weight_source.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

#include "model/architectures.h"
#include "model/dequant.h"

namespace sgl::model {
namespace {

struct NamePair {
  std::string_view hf;
  std::string_view gguf;
};

// Whole-model tensors.
constexpr std::array<NamePair, 3> kGlobalNames = {{
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
}};

// Per-layer suffixes: "model.layers.N." + hf <-> "blk.N." + gguf.
constexpr std::array<NamePair, 17> kLayerNames = {{
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.o_proj.bias", "attn_output.bias"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"mlp.gate_proj.bias", "ffn_gate.bias"},
    {"mlp.down_proj.bias", "ffn_down.bias"},
}};

// Splits "<prefix><N>.<rest>" into N and rest; nullopt unless N is a plain decimal.
std::optional<std::pair<std::string_view, std::string_view>> split_layer(std::string_view name,
                                                                         std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  name.remove_prefix(prefix.size());
  const size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos) return std::nullopt;
  const std::string_view index = name.substr(0, dot);
  int value = 0;
  auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), value);
  if (ec != std::errc() || end != index.data() + index.size()) return std::nullopt;
  return std::make_pair(index, name.substr(dot + 1));
}

// Shared body of the two permutations: moves rows of each head between the rotate-half
// position j*half + i and the interleaved position 2*i + j.
void move_head_rows(const float* src, int64_t rows, int64_t cols, int64_t n_head, float* dst,
                    bool to_interleaved) {
  const int64_t d = rows / n_head, half = d / 2;
  const auto row_bytes = static_cast<size_t>(cols) * sizeof(float);
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t rotate_half = h * d + j * half + i;
        const int64_t interleaved = h * d + 2 * i + j;
        const int64_t from = to_interleaved ? rotate_half : interleaved;
        const int64_t to = to_interleaved ? interleaved : rotate_half;
        std::memcpy(dst + to * cols, src + from * cols, row_bytes);
      }
    }
  }
}

// Whether llama.cpp stored this architecture's q/k rows interleaved. GGUF configs name the
// architecture's model_type (model_config_from_gguf).
bool is_interleaved_qk(const ModelConfig& config) {
  const Architecture* arch = find_architecture_by_model_type(config.model_type);
  return arch != nullptr && arch->gguf_interleaved_qk;
}

}  // namespace

std::optional<std::string> gguf_tensor_name(std::string_view hf_name) {
  for (const NamePair& p : kGlobalNames) {
    if (p.hf == hf_name) return std::string(p.gguf);
  }
  auto layer = split_layer(hf_name, "model.layers.");
  if (!layer) return std::nullopt;
  for (const NamePair& p : kLayerNames) {
    if (p.hf == layer->second)
      return "blk." + std::string(layer->first) + "." + std::string(p.gguf);
  }
  return std::nullopt;
}

std::optional<std::string> hf_tensor_name(std::string_view gguf_name) {
  for (const NamePair& p : kGlobalNames) {
    if (p.gguf == gguf_name) return std::string(p.hf);
  }
  auto layer = split_layer(gguf_name, "blk.");
  if (!layer) return std::nullopt;
  for (const NamePair& p : kLayerNames) {
    if (p.gguf == layer->second) {
      return "model.layers." + std::string(layer->first) + "." + std::string(p.hf);
    }
  }
  return std::nullopt;
}

void permute_rows_to_interleaved(const float* src, int64_t rows, int64_t cols, int64_t n_head,
                                 float* dst) {
  move_head_rows(src, rows, cols, n_head, dst, /*to_interleaved=*/true);
}

void permute_rows_to_rotate_half(const float* src, int64_t rows, int64_t cols, int64_t n_head,
                                 float* dst) {
  move_head_rows(src, rows, cols, n_head, dst, /*to_interleaved=*/false);
}

// ---- GgufWeightSource ----

GgufWeightSource::GgufWeightSource(GgufFile file, const ModelConfig& config)
    : file_(std::move(file)),
      unpermute_qk_(is_interleaved_qk(config)),
      num_heads_(config.num_attention_heads),
      num_kv_heads_(config.num_key_value_heads) {}

const GgufTensorInfo* GgufWeightSource::find(const std::string& hf_name) const {
  std::optional<std::string> g = gguf_tensor_name(hf_name);
  return g ? file_.find_tensor(*g) : nullptr;
}

int64_t GgufWeightSource::permuted_heads(const std::string& hf_name) const {
  if (!unpermute_qk_) return 0;
  auto ends_with = [&](std::string_view suffix) {
    return hf_name.size() >= suffix.size() &&
           hf_name.compare(hf_name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".self_attn.q_proj.weight") || ends_with(".self_attn.q_proj.bias")) {
    return num_heads_;
  }
  if (ends_with(".self_attn.k_proj.weight") || ends_with(".self_attn.k_proj.bias")) {
    return num_kv_heads_;
  }
  return 0;
}

Result<std::vector<int64_t>> GgufWeightSource::shape(const std::string& name) const {
  const GgufTensorInfo* info = find(name);
  if (info == nullptr) {
    return not_found("weight '" + name + "' is missing from " + file_.path());
  }
  return info->shape;
}

std::vector<std::string> GgufWeightSource::names() const {
  std::vector<std::string> out;
  for (const GgufTensorInfo& t : file_.tensors()) {
    if (std::optional<std::string> hf = hf_tensor_name(t.name)) out.push_back(std::move(*hf));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status GgufWeightSource::check(const std::string& name, const std::vector<int64_t>& shape) const {
  const GgufTensorInfo* info = find(name);
  const std::string gguf_name = gguf_tensor_name(name).value_or("?");
  if (info == nullptr) {
    return not_found("weight '" + name + "' (GGUF tensor '" + gguf_name + "') is missing from " +
                     file_.path());
  }
  const std::string where =
      "weight '" + name + "' (GGUF tensor '" + gguf_name + "') in " + file_.path();
  if (info->shape != shape) {
    return invalid_argument(where + " has shape " + shape_to_string(info->shape) + ", expected " +
                            shape_to_string(shape));
  }
  if (!can_dequantize(info->type)) {
    return unimplemented(where + " has ggml type " + ggml_type_name(info->type) +
                         ", which cannot be dequantized (supported: F32, F16, BF16, F64, Q4_0, "
                         "Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)");
  }
  const int64_t heads = permuted_heads(name);
  const int64_t rows = shape.empty() ? 1 : shape[0];
  if (heads > 0 && rows % (2 * heads) != 0) {
    return invalid_argument(where + " has " + std::to_string(rows) +
                            " rows, not a whole number of row pairs for " + std::to_string(heads) +
                            " heads");
  }
  return Status::ok_status();
}

Result<size_t> GgufWeightSource::stored_nbytes(const std::string& name) const {
  const GgufTensorInfo* info = find(name);
  if (info == nullptr) {
    return not_found("weight '" + name + "' (GGUF tensor '" + gguf_tensor_name(name).value_or("?") +
                     "') is missing from " + file_.path());
  }
  return info->nbytes;
}

Result<std::optional<StoredTensor>> GgufWeightSource::stored(
    const std::string& name, const std::vector<int64_t>& shape) const {
  SGL_RETURN_IF_ERROR(check(name, shape));
  const GgufTensorInfo* info = find(name);
  const std::optional<kernels::StoredFormat> format = stored_format(info->type);
  const auto [rows, per_row] = stored_rows(shape);
  // NOTE: GgufFile admits only tensors whose innermost dimension is whole blocks, so the rows of
  // a 2-D or larger tensor are too; a 1-D quantized tensor's "rows" are single values, not whole
  // blocks: it is read as f32 (read_f32), as are F64 tensors.
  if (!format || rows == 0 || per_row % kernels::stored_block_elems(*format) != 0) {
    return std::optional<StoredTensor>();
  }
  StoredTensor out;
  out.format = *format;
  out.data = info->data;
  out.rows = rows;
  out.row_bytes = kernels::stored_bytes(*format, per_row);
  if (out.nbytes() != info->nbytes) return std::optional<StoredTensor>();
  if (const int64_t heads = permuted_heads(name); heads > 0) {  // check(): whole row pairs
    // Row h*D + j*half + i of the rotate-half layout is row h*D + 2*i + j of the file.
    const int64_t d = rows / heads, half = d / 2;
    out.row_order.resize(static_cast<size_t>(rows));
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < half; ++i) {
        for (int64_t j = 0; j < 2; ++j) out.row_order[h * d + j * half + i] = h * d + 2 * i + j;
      }
    }
  }
  return std::optional<StoredTensor>(std::move(out));
}

Status GgufWeightSource::read_f32(const std::string& name, const std::vector<int64_t>& shape,
                                  float* dst) const {
  SGL_RETURN_IF_ERROR(check(name, shape));
  const GgufTensorInfo* info = find(name);
  const std::string where = "weight '" + name + "' (GGUF tensor '" +
                            gguf_tensor_name(name).value_or("?") + "') in " + file_.path();
  const int64_t heads = permuted_heads(name);
  if (heads == 0) {
    Status s = dequantize(info->type, info->data, info->nbytes, info->numel(), dst);
    return s.ok() ? s : s.with_context(where);
  }
  const int64_t rows = shape.empty() ? 1 : shape[0];
  const int64_t cols = rows == 0 ? 0 : info->numel() / rows;
  std::vector<float> interleaved(static_cast<size_t>(info->numel()));
  Status s = dequantize(info->type, info->data, info->nbytes, info->numel(), interleaved.data());
  if (!s.ok()) return s.with_context(where);
  permute_rows_to_rotate_half(interleaved.data(), rows, cols, heads, dst);
  return Status::ok_status();
}

}  // namespace sgl::model
