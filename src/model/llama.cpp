// LlamaForCausalLM: embed -> N x DecoderLayer (attention block + dense or MoE MLP, pre-norm
// residual) -> final norm -> LM head.
#include "model/llama.h"

#include "backend/backend.h"
#include "kernels/copy.h"
#include "kernels/embedding.h"
#include "kernels/gather.h"
#include "kernels/rms_norm.h"
#include "model/config_bounds.h"
#include "model/model_checks.h"
#include "model/rope_cache.h"

namespace sgl::model {
namespace {

// A dense MLP, or a sparse MoE block on the layers a MoE config marks (Mixtral, Qwen2-MoE,
// Qwen3-MoE: the same decoder with that MLP).
Mlp mlp_for_layer(const ModelConfig& config, int64_t layer) {
  if (config.is_sparse_layer(layer)) return MoeMlp(moe_shape(config));
  return DenseMlp(config.hidden_size, config.intermediate_size);
}

}  // namespace

LlamaForCausalLM::LlamaForCausalLM(const ModelConfig& config, const ModelOptions& options)
    : config_(config), options_(options) {
  const AttentionShape attention = attention_shape(config);
  layers_.reserve(static_cast<size_t>(config.num_hidden_layers));
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    layers_.emplace_back(config.hidden_size, config.rms_norm_eps,
                         AttentionBlock(attention, static_cast<int>(i)), mlp_for_layer(config, i));
  }
}

Result<ModelMemoryPlan> LlamaForCausalLM::plan(const ModelConfig& config, WeightLoader& weights,
                                               const ModelOptions& options) {
  SGL_RETURN_IF_ERROR(check_config_bounds(config, "model config"));
  SGL_RETURN_IF_ERROR(check_model_options(options));
  LlamaForCausalLM probe(config, options);
  if (probe.options_.max_positions == 0) {
    probe.options_.max_positions = config.max_position_embeddings;
  }
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
  ActivationPlan activations;
  probe.plan_activations(weights.dtype(), weights.device(), activations);
  plan.activations = activations.bytes();
  return plan;
}

Result<std::unique_ptr<LlamaForCausalLM>> LlamaForCausalLM::load(const ModelConfig& config,
                                                                 WeightLoader& weights,
                                                                 Allocator& allocator,
                                                                 const ModelOptions& options) {
  if (config.hidden_act != "silu") {
    return unimplemented("hidden_act '" + config.hidden_act + "' (only silu is supported)");
  }
  ModelOptions resolved = options;
  if (resolved.max_positions <= 0) resolved.max_positions = config.max_position_embeddings;
  const int64_t positions = resolved.max_positions;
  SGL_ASSIGN_OR_RETURN(const ModelMemoryPlan plan,
                       LlamaForCausalLM::plan(config, weights, resolved));
  SGL_RETURN_IF_ERROR(check_fits(allocator.device(), plan, positions));
  std::unique_ptr<LlamaForCausalLM> model(new LlamaForCausalLM(config, resolved));
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

  ActivationPlan activations;
  model->plan_activations(weights.dtype(), allocator.device(), activations);
  activations.allocate(allocator);
  return model;
}

// Every tensor is queued before any is waited for (WeightLoader::finish, in load()).
Status LlamaForCausalLM::load_weights(WeightLoader& w) {
  const ModelConfig& c = config_;
  // The embedding and the LM head are [V, H] tables split by vocabulary rows.
  auto vocab_table = [&](const char* module) {
    return LinearSpec{.modules = {module},
                      .out_features = {c.vocab_size},
                      .in_features = c.hidden_size,
                      .shard = ShardRule::kVocab};
  };
  SGL_RETURN_IF_ERROR(load_linear(w, vocab_table("model.embed_tokens"), embed_tokens_));
  for (size_t i = 0; i < layers_.size(); ++i) {
    SGL_RETURN_IF_ERROR(layers_[i].load(w, "model.layers." + std::to_string(i) + "."));
  }
  SGL_ASSIGN_OR_RETURN(final_norm_, w.load_norm("model.norm.weight", c.hidden_size));
  if (!c.tie_word_embeddings) {
    SGL_RETURN_IF_ERROR(load_linear(w, vocab_table("lm_head"), lm_head_));
  }
  return Status::ok_status();
}

void LlamaForCausalLM::plan_activations(DType dtype, Device device, ActivationPlan& plan) {
  const ModelConfig& c = config_;
  const int64_t n = options_.max_num_tokens, rows = options_.max_logit_rows;
  // The residual stream stays f32 whatever the activation dtype: bf16 rounding of the running
  // sum is the largest bf16 error source in a deep stack.
  plan.add(&act_.hidden, dtype, n, c.hidden_size);
  plan.add(&act_.residual, DType::kF32, n, c.hidden_size);
  AttentionBlock::plan_scratch(attention_shape(c), n, dtype, act_.layer.attention, plan);
  bool dense = false, sparse = false;
  for (const DecoderLayer& layer : layers_) {
    (std::holds_alternative<MoeMlp>(layer.mlp()) ? sparse : dense) = true;
  }
  if (dense) DenseMlp::plan_scratch(c.intermediate_size, n, dtype, act_.layer.dense_mlp, plan);
  if (sparse) {
    MoeMlp::plan_scratch(moe_shape(c), n, dtype, device, act_.layer.moe_mlp, plan);
  }
  plan.add(&act_.last_hidden, dtype, rows, c.hidden_size);
  plan.add(&act_.logits, DType::kF32, rows, c.vocab_size);
}

ModelOutput LlamaForCausalLM::forward(const ForwardBatch& fb, ModelContext& ctx) {
  const int64_t n = fb.num_tokens;
  SGL_CHECK(n > 0 && n <= options_.max_num_tokens)
      << "forward of " << n << " tokens; the model reserved " << options_.max_num_tokens;
  const int64_t rows = fb.num_logit_rows();
  SGL_CHECK_LE(rows, options_.max_logit_rows);

  const Tensor hidden = act_.hidden.tensor().slice_rows(0, n);
  const Tensor residual = act_.residual.tensor().slice_rows(0, n);
  kernels::embedding(fb.input_ids, embed_tokens_.weight, hidden, ctx.stream);
  // The first layer starts the residual stream.
  kernels::zero(residual, ctx.stream);
  for (const DecoderLayer& layer : layers_) {
    layer.forward(hidden, residual, rope_cos_sin_, act_.layer, fb, ctx);
  }
  kernels::fused_add_rms_norm(hidden, residual, final_norm_, config_.rms_norm_eps, ctx.stream);

  Tensor head_in = hidden;
  if (fb.logits_mode == LogitsMode::kLastPerRequest && fb.mode != ForwardMode::kDecode) {
    head_in = act_.last_hidden.tensor().slice_rows(0, rows);
    kernels::gather_last_tokens(hidden, fb.qo_indptr, head_in, ctx.stream);
  }
  const Linear& head = config_.tie_word_embeddings ? embed_tokens_ : lm_head_;
  const Tensor logits = act_.logits.tensor().slice_rows(0, rows);
  head.forward(head_in, logits, ctx.stream);
  return {logits, fb.capture_hidden_states ? head_in : Tensor()};
}

}  // namespace sgl::model
