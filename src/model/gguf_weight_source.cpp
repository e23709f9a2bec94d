// GGUF tensor naming, the q/k row (un)permutation, stored (device-converted) and dequantizing
// reads.
#include "model/gguf_weight_source.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

#include "model/architectures.h"
#include "model/config_bounds.h"
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
constexpr std::array<NamePair, 22> kLayerNames = {{
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
    // Sparse MoE blocks (Qwen2-MoE / Qwen3-MoE spelling; Mixtral's router: kMixtralRouter).
    {"mlp.gate.weight", "ffn_gate_inp.weight"},
    {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
    {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
    {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
}};
constexpr NamePair kMixtralRouter = {"block_sparse_moe.gate.weight", "ffn_gate_inp.weight"};

// A MoE layer's experts: "mlp.experts.E.<qwen>.weight" (Mixtral: "block_sparse_moe.experts.E.
// <mixtral>.weight") is slice E of "blk.N.<gguf>".
struct ExpertNames {
  std::string_view qwen, mixtral, gguf;
};
constexpr std::array<ExpertNames, 3> kExpertNames = {{
    {"gate_proj", "w1", "ffn_gate_exps.weight"},
    {"up_proj", "w3", "ffn_up_exps.weight"},
    {"down_proj", "w2", "ffn_down_exps.weight"},
}};

// Parses a plain decimal index (no sign, no leading '+'); nullopt otherwise.
std::optional<int64_t> parse_index(std::string_view text) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return std::nullopt;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// "experts.E.<name>.weight" under `block` -> the expert's GGUF place in layer `layer`.
std::optional<GgufTensorRef> expert_ref(std::string_view layer, std::string_view rest,
                                        std::string_view block, bool mixtral) {
  const std::string prefix = std::string(block) + "experts.";
  if (rest.substr(0, prefix.size()) != prefix) return std::nullopt;
  rest.remove_prefix(prefix.size());
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::optional<int64_t> expert = parse_index(rest.substr(0, dot));
  if (!expert) return std::nullopt;
  rest.remove_prefix(dot + 1);
  for (const ExpertNames& e : kExpertNames) {
    if (rest == std::string(mixtral ? e.mixtral : e.qwen) + ".weight") {
      return GgufTensorRef{"blk." + std::string(layer) + "." + std::string(e.gguf), *expert};
    }
  }
  return std::nullopt;
}

// Splits "<prefix><N>.<rest>" into N and rest; nullopt unless N is a plain decimal.
std::optional<std::pair<std::string_view, std::string_view>> split_layer(std::string_view name,
                                                                         std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  name.remove_prefix(prefix.size());
  const size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos) return std::nullopt;
  const std::string_view index = name.substr(0, dot);
  if (!parse_index(index)) return std::nullopt;
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

// Equal but for leading 1s: llama.cpp declares some vectors 1-D that checkpoints store as
// [1, n] (Qwen2-MoE's shared_expert_gate), and either layout holds the same values.
bool same_shape(std::vector<int64_t> a, std::vector<int64_t> b) {
  auto squeeze = [](std::vector<int64_t>& s) {
    while (s.size() > 1 && s.front() == 1) s.erase(s.begin());
  };
  squeeze(a);
  squeeze(b);
  return a == b;
}

}  // namespace

std::optional<GgufTensorRef> gguf_tensor_ref(std::string_view hf_name) {
  for (const NamePair& p : kGlobalNames) {
    if (p.hf == hf_name) return GgufTensorRef{std::string(p.gguf)};
  }
  auto layer = split_layer(hf_name, "model.layers.");
  if (!layer) return std::nullopt;
  const auto [index, rest] = *layer;
  const std::string blk = "blk." + std::string(index) + ".";
  for (const NamePair& p : kLayerNames) {
    if (p.hf == rest) return GgufTensorRef{blk + std::string(p.gguf)};
  }
  if (rest == kMixtralRouter.hf) return GgufTensorRef{blk + std::string(kMixtralRouter.gguf)};
  if (auto e = expert_ref(index, rest, "mlp.", /*mixtral=*/false)) return e;
  return expert_ref(index, rest, "block_sparse_moe.", /*mixtral=*/true);
}

std::optional<std::string> gguf_tensor_name(std::string_view hf_name) {
  std::optional<GgufTensorRef> ref = gguf_tensor_ref(hf_name);
  if (!ref) return std::nullopt;
  return std::move(ref->name);
}

std::optional<std::string> hf_tensor_name(std::string_view gguf_name, MoeStyle moe) {
  for (const NamePair& p : kGlobalNames) {
    if (p.gguf == gguf_name) return std::string(p.hf);
  }
  auto layer = split_layer(gguf_name, "blk.");
  if (!layer) return std::nullopt;
  const std::string prefix = "model.layers." + std::string(layer->first) + ".";
  if (moe == MoeStyle::kMixtral && layer->second == kMixtralRouter.gguf) {
    return prefix + std::string(kMixtralRouter.hf);
  }
  for (const NamePair& p : kLayerNames) {
    if (p.gguf == layer->second) return prefix + std::string(p.hf);
  }
  return std::nullopt;
}

std::optional<std::string> hf_expert_name(std::string_view gguf_name, int64_t expert,
                                          MoeStyle moe) {
  auto layer = split_layer(gguf_name, "blk.");
  if (!layer || expert < 0) return std::nullopt;
  const bool mixtral = moe == MoeStyle::kMixtral;
  for (const ExpertNames& e : kExpertNames) {
    if (e.gguf != layer->second) continue;
    return "model.layers." + std::string(layer->first) + "." +
           (mixtral ? "block_sparse_moe." : "mlp.") + "experts." + std::to_string(expert) + "." +
           std::string(mixtral ? e.mixtral : e.qwen) + ".weight";
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
      num_heads_(config.num_attention_heads),
      num_kv_heads_(config.num_key_value_heads) {
  // GGUF configs name the architecture's model_type (model_config_from_gguf).
  if (const Architecture* arch = find_architecture_by_model_type(config.model_type)) {
    moe_ = arch->moe;
    unpermute_qk_ = arch->gguf_interleaved_qk;
  }
}

std::optional<GgufWeightSource::View> GgufWeightSource::find(const std::string& hf_name) const {
  const std::optional<GgufTensorRef> ref = gguf_tensor_ref(hf_name);
  if (!ref) return std::nullopt;
  const GgufTensorInfo* info = file_.find_tensor(ref->name);
  if (info == nullptr) return std::nullopt;
  View v{info, ref->name, info->shape, info->data, info->nbytes, info->numel()};
  if (ref->slice < 0) return v;
  // One expert of a stacked [E, rows, cols] tensor: E equal slices of whole rows (GgufFile admits
  // only tensors whose rows are whole blocks), so each is a plain byte range.
  if (info->shape.size() < 2 || ref->slice >= info->shape[0]) return std::nullopt;
  const auto experts = static_cast<size_t>(info->shape[0]);
  // NOTE: appended piecewise: GCC 12 warns falsely (-Wrestrict) on "[" + to_string(...).
  v.gguf_name.append(1, '[').append(std::to_string(ref->slice)).append(1, ']');
  v.shape.erase(v.shape.begin());
  v.nbytes = info->nbytes / experts;
  v.data = info->data + static_cast<size_t>(ref->slice) * v.nbytes;
  v.numel = info->numel() / info->shape[0];
  return v;
}

Status GgufWeightSource::missing(const std::string& hf_name) const {
  return not_found("weight '" + hf_name + "' (GGUF tensor '" +
                   gguf_tensor_name(hf_name).value_or("?") + "') is missing from " + file_.path());
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
  const std::optional<View> v = find(name);
  if (!v) return missing(name);
  return v->shape;
}

std::vector<std::string> GgufWeightSource::names() const {
  std::vector<std::string> out;
  for (const GgufTensorInfo& t : file_.tensors()) {
    if (std::optional<std::string> hf = hf_tensor_name(t.name, moe_)) {
      out.push_back(std::move(*hf));
      continue;
    }
    // NOTE: bounded: a hostile file may declare a huge expert dimension beside a zero one.
    const int64_t experts = t.shape.size() < 2 || t.numel() == 0
                                ? 0
                                : std::min<int64_t>(t.shape[0], ConfigBounds::kMaxNumExperts);
    for (int64_t e = 0; e < experts; ++e) {
      std::optional<std::string> hf = hf_expert_name(t.name, e, moe_);
      if (!hf) break;
      out.push_back(std::move(*hf));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string GgufWeightSource::weight_label(const std::string& hf_name, const View& v) const {
  return "weight '" + hf_name + "' (GGUF tensor '" + v.gguf_name + "') in " + file_.path();
}

Result<GgufWeightSource::View> GgufWeightSource::checked(const std::string& name,
                                                         const std::vector<int64_t>& shape) const {
  std::optional<View> v = find(name);
  if (!v) return missing(name);
  const auto where = [&] { return weight_label(name, *v); };
  if (!same_shape(v->shape, shape)) {
    return invalid_argument(where() + " has shape " + shape_to_string(v->shape) + ", expected " +
                            shape_to_string(shape));
  }
  if (!can_dequantize(v->info->type)) {
    return unimplemented(where() + " has ggml type " + ggml_type_name(v->info->type) +
                         ", which cannot be dequantized (supported: F32, F16, BF16, F64, Q4_0, "
                         "Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)");
  }
  const int64_t heads = permuted_heads(name);
  const int64_t rows = shape.empty() ? 1 : shape[0];
  if (heads > 0 && rows % (2 * heads) != 0) {
    return invalid_argument(where() + " has " + std::to_string(rows) +
                            " rows, not a whole number of row pairs for " + std::to_string(heads) +
                            " heads");
  }
  return std::move(*v);
}

Status GgufWeightSource::check(const std::string& name, const std::vector<int64_t>& shape) const {
  return checked(name, shape).status();
}

Result<size_t> GgufWeightSource::stored_nbytes(const std::string& name) const {
  const std::optional<View> v = find(name);
  if (!v) return missing(name);
  return v->nbytes;
}

Result<std::optional<StoredTensor>> GgufWeightSource::stored(
    const std::string& name, const std::vector<int64_t>& shape) const {
  SGL_ASSIGN_OR_RETURN(const View v, checked(name, shape));
  const std::optional<kernels::StoredFormat> format = stored_format(v.info->type);
  const auto [rows, per_row] = stored_rows(shape);
  // NOTE: GgufFile admits only tensors whose innermost dimension is whole blocks, so the rows of
  // a 2-D or larger tensor are too; a 1-D quantized tensor's "rows" are single values, not whole
  // blocks: it is read as f32 (read_f32), as are F64 tensors.
  if (!format || rows == 0 || per_row % kernels::stored_block_elems(*format) != 0) {
    return std::optional<StoredTensor>();
  }
  StoredTensor out;
  out.format = *format;
  out.data = v.data;
  out.rows = rows;
  out.row_bytes = kernels::stored_bytes(*format, per_row);
  if (out.nbytes() != v.nbytes) return std::optional<StoredTensor>();
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
  SGL_ASSIGN_OR_RETURN(const View v, checked(name, shape));
  const int64_t heads = permuted_heads(name);
  if (heads == 0) {
    Status s = dequantize(v.info->type, v.data, v.nbytes, v.numel, dst);
    return s.ok() ? s : s.with_context(weight_label(name, v));
  }
  const int64_t rows = shape.empty() ? 1 : shape[0];
  const int64_t cols = rows == 0 ? 0 : v.numel / rows;
  std::vector<float> interleaved(static_cast<size_t>(v.numel));
  Status s = dequantize(v.info->type, v.data, v.nbytes, v.numel, interleaved.data());
  if (!s.ok()) return s.with_context(weight_label(name, v));
  permute_rows_to_rotate_half(interleaved.data(), rows, cols, heads, dst);
  return Status::ok_status();
}

}  // namespace sgl::model
