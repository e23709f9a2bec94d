// The Llama-family decoder: embed -> N x (attention + SwiGLU MLP, pre-norm residual) -> LM head.
#include "model/llama.h"

#include <charconv>
#include <cstdio>
#include <string_view>

#include "backend/backend.h"
#include "kernels/activation.h"
#include "kernels/copy.h"
#include "kernels/embedding.h"
#include "kernels/gather.h"
#include "kernels/linear.h"
#include "kernels/rms_norm.h"
#include "kernels/rope.h"
#include "model/config_bounds.h"
#include "model/rope_cache.h"

namespace sgl::model {

namespace {

std::string gib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}

// The plan must fit the device: GPU memory is not overcommitted (cudaMalloc fails, and fails
// by aborting), and host memory past the machine's RAM cannot be resident either.
Status check_fits(Device device, const ModelMemoryPlan& plan, int64_t max_positions) {
  SGL_ASSIGN_OR_RETURN(backend::MemoryInfo mem, backend::memory_info(device));
  const bool cpu = device.is_cpu();
  const auto available = static_cast<int64_t>(cpu ? mem.total_bytes : mem.free_bytes);
  if (plan.total() <= available) return Status::ok_status();
  return resource_exhausted(
      "the model needs " + gib(plan.total()) + " on " + device.to_string() + " (weights " +
      gib(plan.weights) + ", activations " + gib(plan.activations) + ", RoPE table " +
      gib(plan.rope_table) + " for " + std::to_string(max_positions) + " positions) but " +
      device.to_string() + " has " + gib(available) + (cpu ? " of memory" : " free") +
      (plan.rope_table * 4 > plan.total() ? "; a smaller --context-length shrinks the RoPE table"
                                          : ""));
}

// A checkpoint with more layers than the config would load as a different, truncated network
// and answer without complaint; refuse it.
Status check_no_extra_layers(const ModelConfig& config, const WeightSource* source) {
  if (source == nullptr) return Status::ok_status();
  constexpr std::string_view kPrefix = "model.layers.";
  for (const std::string& name : source->names()) {
    if (name.compare(0, kPrefix.size(), kPrefix) != 0) continue;
    int64_t layer = 0;
    const char* begin = name.data() + kPrefix.size();
    const auto [end, ec] = std::from_chars(begin, name.data() + name.size(), layer);
    if (ec != std::errc() || end == begin || layer < config.num_hidden_layers) continue;
    return invalid_argument(source->describe() + ": weight '" + name + "' belongs to layer " +
                            std::to_string(layer) + ", but the config has num_hidden_layers " +
                            std::to_string(config.num_hidden_layers));
  }
  return Status::ok_status();
}

}  // namespace

Result<ModelMemoryPlan> LlamaForCausalLM::plan(const ModelConfig& config, WeightLoader& weights,
                                               const ModelOptions& options) {
  SGL_RETURN_IF_ERROR(check_config_bounds(config, "model config"));
  if (options.max_positions < 0 || options.max_positions > ConfigBounds::kMaxContextLength ||
      options.max_num_tokens <= 0 || options.max_logit_rows <= 0) {
    return invalid_argument(
        "model options: max_positions " + std::to_string(options.max_positions) +
        ", max_num_tokens " + std::to_string(options.max_num_tokens) + ", max_logit_rows " +
        std::to_string(options.max_logit_rows) +
        " (positions 0 = the config's; the others positive; " + "positions at most " +
        std::to_string(ConfigBounds::kMaxContextLength) + ")");
  }
  LlamaForCausalLM probe(config, options);
  if (probe.options_.max_positions == 0)
    probe.options_.max_positions = config.max_position_embeddings;
  const int64_t before = weights.checked_bytes();
  weights.set_check_only(true);
  const Status checked = probe.load_weights(weights);
  weights.set_check_only(false);
  SGL_RETURN_IF_ERROR(checked);

  SGL_RETURN_IF_ERROR(check_no_extra_layers(config, weights.source()));

  ModelMemoryPlan plan;
  plan.weights = weights.checked_bytes() - before;
  plan.rope_table =
      probe.options_.max_positions * config.head_dim * static_cast<int64_t>(sizeof(float));
  for (const ActivationSpec& a : probe.activation_specs(weights.dtype())) {
    plan.activations += a.rows * a.cols * static_cast<int64_t>(dtype_size(a.dtype));
  }
  return plan;
}

Result<std::unique_ptr<LlamaForCausalLM>> LlamaForCausalLM::load(const ModelConfig& config,
                                                                 WeightLoader& weights,
                                                                 Allocator& allocator,
                                                                 const ModelOptions& options) {
  if (config.hidden_act != "silu") {
    return unimplemented("hidden_act '" + config.hidden_act + "' (only silu is supported)");
  }
  std::unique_ptr<LlamaForCausalLM> model(new LlamaForCausalLM(config, options));
  if (model->options_.max_positions <= 0) {
    model->options_.max_positions = config.max_position_embeddings;
  }
  const int64_t positions = model->options_.max_positions;
  SGL_ASSIGN_OR_RETURN(const ModelMemoryPlan plan,
                       LlamaForCausalLM::plan(config, weights, model->options_));
  SGL_RETURN_IF_ERROR(check_fits(allocator.device(), plan, positions));
  // The loads are queued; finish() also on failure, so no copy outlives the model's Buffers.
  const Status loaded = model->load_weights(weights);
  const Status uploaded = weights.finish();
  SGL_RETURN_IF_ERROR(loaded);
  SGL_RETURN_IF_ERROR(uploaded);

  // RoPE table: computed on the host in f32, uploaded once.
  const std::vector<float> table = compute_rope_cos_sin(config, positions);
  model->rope_cos_sin_ = Buffer(allocator, DType::kF32, {positions, config.head_dim});
  Tensor host(const_cast<float*>(table.data()), DType::kF32, {positions, config.head_dim});
  kernels::copy(host, model->rope_cos_sin_, backend::Stream{allocator.device(), nullptr});
  backend::synchronize(backend::Stream{allocator.device(), nullptr});

  model->allocate_activations(allocator);
  return model;
}

Status LlamaForCausalLM::load_weights(WeightLoader& w) {
  const ModelConfig& c = config_;
  const int64_t h = c.hidden_size, q = c.q_size(), kv = c.kv_size(), inter = c.intermediate_size;
  SGL_ASSIGN_OR_RETURN(embed_tokens_, w.load("model.embed_tokens.weight", {c.vocab_size, h}));
  layers_.resize(c.num_hidden_layers);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    Layer& layer = layers_[i];
    SGL_ASSIGN_OR_RETURN(layer.input_norm, w.load_norm(p + "input_layernorm.weight", h));
    SGL_ASSIGN_OR_RETURN(
        layer.qkv_proj, w.load_concat({p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight",
                                       p + "self_attn.v_proj.weight"},
                                      {{q, h}, {kv, h}, {kv, h}}));
    if (c.attention_bias) {
      SGL_ASSIGN_OR_RETURN(layer.qkv_bias,
                           w.load_concat({p + "self_attn.q_proj.bias", p + "self_attn.k_proj.bias",
                                          p + "self_attn.v_proj.bias"},
                                         {{q}, {kv}, {kv}}));
    }
    if (c.qk_norm) {
      SGL_ASSIGN_OR_RETURN(layer.q_norm, w.load_norm(p + "self_attn.q_norm.weight", c.head_dim));
      SGL_ASSIGN_OR_RETURN(layer.k_norm, w.load_norm(p + "self_attn.k_norm.weight", c.head_dim));
    }
    SGL_ASSIGN_OR_RETURN(layer.o_proj, w.load(p + "self_attn.o_proj.weight", {h, q}));
    SGL_ASSIGN_OR_RETURN(layer.post_norm, w.load_norm(p + "post_attention_layernorm.weight", h));
    SGL_ASSIGN_OR_RETURN(layer.gate_up_proj,
                         w.load_concat({p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"},
                                       {{inter, h}, {inter, h}}));
    SGL_ASSIGN_OR_RETURN(layer.down_proj, w.load(p + "mlp.down_proj.weight", {h, inter}));
  }
  SGL_ASSIGN_OR_RETURN(final_norm_, w.load_norm("model.norm.weight", h));
  if (!c.tie_word_embeddings) {
    SGL_ASSIGN_OR_RETURN(lm_head_, w.load("lm_head.weight", {c.vocab_size, h}));
  }
  return Status::ok_status();
}

std::vector<LlamaForCausalLM::ActivationSpec> LlamaForCausalLM::activation_specs(DType dt) const {
  const ModelConfig& c = config_;
  const int64_t n = options_.max_num_tokens, rows = options_.max_logit_rows;
  // The residual stream stays f32 whatever the activation dtype: bf16 rounding of the running
  // sum is the largest bf16 error source in a deep stack.
  return {
      {&Activations::hidden, dt, n, c.hidden_size},
      {&Activations::residual, DType::kF32, n, c.hidden_size},
      {&Activations::qkv, dt, n, c.q_size() + 2 * c.kv_size()},
      {&Activations::attn_out, dt, n, c.q_size()},
      {&Activations::gate_up, dt, n, 2 * c.intermediate_size},
      {&Activations::mlp_act, dt, n, c.intermediate_size},
      {&Activations::last_hidden, dt, rows, c.hidden_size},
      {&Activations::logits, DType::kF32, rows, c.vocab_size},
  };
}

void LlamaForCausalLM::allocate_activations(Allocator& allocator) {
  for (const ActivationSpec& a : activation_specs(embed_tokens_.tensor().dtype())) {
    act_.*a.buffer = Buffer(allocator, a.dtype, {a.rows, a.cols});
  }
}

void LlamaForCausalLM::run_layer(int index, const Layer& layer, int64_t n, const ForwardBatch& fb,
                                 ModelContext& ctx) {
  const ModelConfig& c = config_;
  const double eps = c.rms_norm_eps;
  const Tensor hidden = act_.hidden.tensor().slice_rows(0, n);
  const Tensor residual = act_.residual.tensor().slice_rows(0, n);
  const Tensor qkv = act_.qkv.tensor().slice_rows(0, n);
  const Tensor attn_out = act_.attn_out.tensor().slice_rows(0, n);
  const Tensor gate_up = act_.gate_up.tensor().slice_rows(0, n);
  const Tensor mlp_act = act_.mlp_act.tensor().slice_rows(0, n);

  // Pre-attention norm; the first layer starts the residual stream (zeroed in forward()).
  kernels::fused_add_rms_norm(hidden, residual, layer.input_norm, eps, ctx.stream);

  kernels::linear(hidden, layer.qkv_proj, layer.qkv_bias.tensor(), qkv, ctx.stream);
  const Tensor q = qkv.slice_last(0, c.q_size()).split_heads(c.num_attention_heads);
  const Tensor k = qkv.slice_last(c.q_size(), c.kv_size()).split_heads(c.num_key_value_heads);
  const Tensor v =
      qkv.slice_last(c.q_size() + c.kv_size(), c.kv_size()).split_heads(c.num_key_value_heads);
  if (c.qk_norm) {
    kernels::rms_norm(q, layer.q_norm, eps, q, ctx.stream);
    kernels::rms_norm(k, layer.k_norm, eps, k, ctx.stream);
  }
  // RoPE, the KV store and attention: one pass where the backend fuses RoPE with the store.
  if (!ctx.attention.forward_with_rope(index, q, k, v, fb.positions, rope_cos_sin_, attn_out, fb)) {
    kernels::rope(q, k, fb.positions, rope_cos_sin_, ctx.stream);
    ctx.attention.forward(index, q, k, v, attn_out, fb);
  }
  kernels::linear(attn_out, layer.o_proj, Tensor(), hidden, ctx.stream);

  kernels::fused_add_rms_norm(hidden, residual, layer.post_norm, eps, ctx.stream);
  kernels::linear_silu_and_mul(hidden, layer.gate_up_proj, gate_up, mlp_act, ctx.stream);
  kernels::linear(mlp_act, layer.down_proj, Tensor(), hidden, ctx.stream);
}

ModelOutput LlamaForCausalLM::forward(const ForwardBatch& fb, ModelContext& ctx) {
  const int64_t n = fb.num_tokens;
  SGL_CHECK(n > 0 && n <= options_.max_num_tokens)
      << "forward of " << n << " tokens; the model reserved " << options_.max_num_tokens;
  const int64_t rows = fb.num_logit_rows();
  SGL_CHECK_LE(rows, options_.max_logit_rows);

  const Tensor hidden = act_.hidden.tensor().slice_rows(0, n);
  kernels::embedding(fb.input_ids, embed_tokens_, hidden, ctx.stream);
  kernels::zero(act_.residual.tensor().slice_rows(0, n), ctx.stream);
  for (size_t i = 0; i < layers_.size(); ++i) {
    run_layer(static_cast<int>(i), layers_[i], n, fb, ctx);
  }
  const Tensor residual = act_.residual.tensor().slice_rows(0, n);
  kernels::fused_add_rms_norm(hidden, residual, final_norm_, config_.rms_norm_eps, ctx.stream);

  Tensor head_in = hidden;
  if (fb.logits_mode == LogitsMode::kLastPerRequest && fb.mode != ForwardMode::kDecode) {
    head_in = act_.last_hidden.tensor().slice_rows(0, rows);
    kernels::gather_last_tokens(hidden, fb.qo_indptr, head_in, ctx.stream);
  }
  const Buffer& head = config_.tie_word_embeddings ? embed_tokens_ : lm_head_;
  const Tensor logits = act_.logits.tensor().slice_rows(0, rows);
  kernels::linear(head_in, head, Tensor(), logits, ctx.stream);
  return {logits, fb.capture_hidden_states ? head_in : Tensor()};
}

}  // namespace sgl::model
