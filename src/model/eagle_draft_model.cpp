// EagleDraftModel: config, checking, loading and the draft pass.
#include "model/eagle_draft_model.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "backend/backend.h"
#include "kernels/copy.h"
#include "kernels/embedding.h"
#include "kernels/gather.h"
#include "kernels/linear.h"
#include "kernels/rms_norm.h"
#include "model/config_bounds.h"
#include "model/mapped_file.h"
#include "model/model_checks.h"
#include "model/rope_cache.h"
#include "model/weight_source.h"

namespace sgl::model {
namespace {

using Json = nlohmann::json;

// EAGLE-3's fields beyond a Llama config.
Status parse_eagle3_fields(const Json& top, const std::string& source, EagleDraftConfig& out) {
  const auto vocab = top.find("draft_vocab_size");
  if (vocab == top.end() || vocab->is_null()) {
    out.draft_vocab_size = out.llama.vocab_size;  // a head over the whole vocabulary
  } else if (!vocab->is_number_integer() || vocab->get<int64_t>() <= 0 ||
             vocab->get<int64_t>() > out.llama.vocab_size) {
    return invalid_argument(source + ": draft_vocab_size must be an integer in [1, vocab_size " +
                            std::to_string(out.llama.vocab_size) + "], got " + vocab->dump());
  } else {
    out.draft_vocab_size = vocab->get<int64_t>();
  }
  const auto eagle = top.find("eagle_config");
  if (eagle == top.end() || eagle->is_null()) return Status::ok_status();
  if (!eagle->is_object()) return invalid_argument(source + ": eagle_config must be an object");
  const auto ids = eagle->find("eagle_aux_hidden_state_layer_ids");
  if (ids == eagle->end() || ids->is_null()) return Status::ok_status();
  if (!ids->is_array() || ids->size() != 3) {
    return invalid_argument(source +
                            ": eagle_config.eagle_aux_hidden_state_layer_ids must list three "
                            "layer ids, got " +
                            ids->dump());
  }
  for (const Json& id : *ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) {
      return invalid_argument(
          source + ": eagle_config.eagle_aux_hidden_state_layer_ids must be layer ids, got " +
          ids->dump());
    }
    out.aux_hidden_state_layer_ids.push_back(id.get<int64_t>());
  }
  return Status::ok_status();
}

}  // namespace

Result<EagleDraftConfig> load_eagle_draft_config(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / "config.json";
  // Read once: the Llama fields and EAGLE-3's come from the same text.
  Result<std::string> text = read_small_file(path, kMaxConfigFileBytes);
  if (!text.ok()) return text.status().with_context("cannot read the draft head's config");
  SGL_ASSIGN_OR_RETURN(ModelConfig llama, parse_model_config(*text, path.string()));
  const Architecture* arch = find_architecture(llama.architecture);
  if (arch == nullptr || arch->draft == DraftKind::kNone) {
    return invalid_argument(path.string() + ": architecture '" + llama.architecture +
                            "' is not an EAGLE draft head (LlamaForCausalLMEagle or "
                            "LlamaForCausalLMEagle3)");
  }
  EagleDraftConfig config;
  config.kind = arch->draft;
  config.llama = std::move(llama);
  config.draft_vocab_size = config.llama.vocab_size;
  if (config.kind == DraftKind::kEagle3) {
    // parse_model_config accepted the text, so it is a JSON object.
    const Json top = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
    SGL_RETURN_IF_ERROR(parse_eagle3_fields(top, path.string(), config));
  }
  return config;
}

std::vector<int64_t> default_eagle3_aux_layers(int64_t num_layers) {
  return {1, num_layers / 2 - 1, num_layers - 4};
}

EagleDraftModel::EagleDraftModel(const EagleDraftConfig& config, const ModelOptions& options,
                                 const EmbedAndHead& target)
    : config_(config),
      options_(options),
      target_(target),
      attention_(
          [&] {
            AttentionShape shape = attention_shape(config.llama);
            // EAGLE-3 attends over [norm(embedding), norm(hidden)].
            if (config.kind == DraftKind::kEagle3) shape.input_size = 2 * shape.hidden_size;
            return shape;
          }(),
          /*layer_id=*/0),
      mlp_(config.llama.hidden_size, config.llama.intermediate_size) {}

Result<std::unique_ptr<EagleDraftModel>> EagleDraftModel::load(const EagleDraftConfig& config,
                                                               WeightLoader& weights,
                                                               Allocator& allocator,
                                                               const ModelOptions& options,
                                                               const EmbedAndHead& target) {
  const ModelConfig& c = config.llama;
  SGL_RETURN_IF_ERROR(check_config_bounds(c, "draft model config"));
  SGL_RETURN_IF_ERROR(check_model_options(options));
  if (config.kind == DraftKind::kNone) return invalid_argument("not an EAGLE draft head config");
  if (c.num_hidden_layers != 1) {
    return unimplemented("the draft head has " + std::to_string(c.num_hidden_layers) +
                         " layers; EAGLE heads of one decoder layer are supported");
  }
  if (c.hidden_act != "silu") {
    return unimplemented("hidden_act '" + c.hidden_act + "' (only silu is supported)");
  }
  if (target.embed_tokens == nullptr || target.lm_head == nullptr) {
    return invalid_argument("the target model has no embedding and LM head for a draft to share");
  }
  const Tensor& shared = target.embed_tokens->weight.tensor();  // [V / tp, H]
  if (target.embed_tokens->vocab_size != c.vocab_size || shared.size(1) != c.hidden_size) {
    return invalid_argument("the draft head's vocabulary x hidden size (" +
                            std::to_string(c.vocab_size) + " x " + std::to_string(c.hidden_size) +
                            ") is not the target's (" +
                            std::to_string(target.embed_tokens->vocab_size) + " x " +
                            std::to_string(shared.size(1)) + ")");
  }
  if (shared.dtype() != weights.dtype() || shared.device() != allocator.device()) {
    return invalid_argument("the draft head must load in the target's dtype on its device");
  }

  std::unique_ptr<EagleDraftModel> model(new EagleDraftModel(config, options, target));
  if (model->options_.max_positions == 0) model->options_.max_positions = c.max_position_embeddings;
  const int64_t positions = model->options_.max_positions;

  const Linear& head = *target.lm_head;
  ActivationPlan activations;
  SGL_ASSIGN_OR_RETURN(
      model->memory_plan_,
      model->check_and_plan(weights, head.tp_size, head.weight.tensor().size(0), activations));
  SGL_RETURN_IF_ERROR(check_fits(allocator.device(), model->memory_plan_, positions));

  const Status loaded = model->load_weights(weights);
  const Status uploaded = weights.finish();
  SGL_RETURN_IF_ERROR(loaded);
  SGL_RETURN_IF_ERROR(uploaded);
  SGL_RETURN_IF_ERROR(model->load_draft_to_target(weights.source()));

  const std::vector<float> table = compute_rope_cos_sin(c, positions);
  model->rope_cos_sin_ = Buffer(allocator, DType::kF32, {positions, c.head_dim});
  Tensor host(const_cast<float*>(table.data()), DType::kF32, {positions, c.head_dim});
  kernels::copy(host, model->rope_cos_sin_, backend::Stream{allocator.device(), nullptr});
  backend::synchronize(backend::Stream{allocator.device(), nullptr});
  activations.allocate(allocator);
  return model;
}

Result<ModelMemoryPlan> EagleDraftModel::plan(const EagleDraftConfig& config, WeightLoader& weights,
                                              const ModelOptions& options, int target_tp) {
  const ModelConfig& c = config.llama;
  SGL_RETURN_IF_ERROR(check_config_bounds(c, "draft model config"));
  EagleDraftModel model(config, options, EmbedAndHead{});  // (load()'s checks come later)
  if (model.options_.max_positions == 0) model.options_.max_positions = c.max_position_embeddings;
  SGL_ASSIGN_OR_RETURN(const ShardRange part,
                       shard_of(c.vocab_size, c.vocab_size, TensorParallel{0, target_tp},
                                "the target's LM head vocabulary"));
  ActivationPlan activations;
  return model.check_and_plan(weights, target_tp, part.size, activations);
}

Result<ModelMemoryPlan> EagleDraftModel::check_and_plan(WeightLoader& weights, int head_tp,
                                                        int64_t head_rows,
                                                        ActivationPlan& activations) {
  const int64_t before = weights.checked_bytes();
  weights.set_check_only(true);
  const Status checked = load_weights(weights);
  weights.set_check_only(false);
  SGL_RETURN_IF_ERROR(checked);
  ModelMemoryPlan plan;
  plan.weights = weights.checked_bytes() - before;
  plan.rope_table =
      options_.max_positions * config_.llama.head_dim * static_cast<int64_t>(sizeof(float));
  plan_activations(weights.dtype(), head_tp, head_rows, activations);
  plan.activations = activations.bytes();
  return plan;
}

// The tensor names of SGLang's llama_eagle.py / llama_eagle3.py checkpoints (as published).
Status EagleDraftModel::load_weights(WeightLoader& w) {
  const ModelConfig& c = config_.llama;
  const int64_t h = c.hidden_size;
  const bool eagle3 = config_.kind == DraftKind::kEagle3;
  const std::string layer = eagle3 ? "midlayer." : "layers.0.";
  // EAGLE's fc carries a bias (EAGLE-1/2 training code's nn.Linear default); EAGLE-3's may.
  SGL_RETURN_IF_ERROR(
      load_linear(w,
                  LinearSpec{.modules = {"fc"},
                             .out_features = {h},
                             .in_features = config_.target_hidden_width() + (eagle3 ? 0 : h),
                             .bias = w.source() != nullptr && w.has("fc.bias"),
                             .shard = ShardRule::kReplicated},
                  fc_));
  if (eagle3) {
    SGL_RETURN_IF_ERROR(w.store(input_norm_, w.load_norm(layer + "input_layernorm.weight", h)));
    SGL_RETURN_IF_ERROR(w.store(hidden_norm_, w.load_norm(layer + "hidden_norm.weight", h)));
  }
  // EAGLE's layer has no input norm (SGLang drops it): a checkpoint's is never read.
  SGL_RETURN_IF_ERROR(attention_.load(w, layer + "self_attn."));
  SGL_RETURN_IF_ERROR(
      w.store(post_norm_, w.load_norm(layer + "post_attention_layernorm.weight", h)));
  SGL_RETURN_IF_ERROR(mlp_.load(w, layer + "mlp."));
  if (eagle3) {
    SGL_RETURN_IF_ERROR(w.store(final_norm_, w.load_norm("norm.weight", h)));
    SGL_RETURN_IF_ERROR(load_linear(w,
                                    LinearSpec{.modules = {"lm_head"},
                                               .out_features = {config_.draft_vocab_size},
                                               .in_features = h,
                                               .shard = ShardRule::kVocab},
                                    lm_head_));
  }
  return Status::ok_status();
}

Status EagleDraftModel::load_draft_to_target(const WeightSource* source) {
  if (config_.kind != DraftKind::kEagle3) return Status::ok_status();
  const int64_t d = config_.draft_vocab_size, vocab = config_.llama.vocab_size;
  draft_to_target_.resize(static_cast<size_t>(d));
  const auto* safetensors = dynamic_cast<const SafetensorsWeightSource*>(source);
  const TensorInfo* d2t = safetensors ? safetensors->checkpoint().find("d2t") : nullptr;
  if (d2t == nullptr) {
    // Dummy weights, or a head over the whole vocabulary stored without its identity map.
    if (source != nullptr && d != vocab) {
      return invalid_argument("the EAGLE-3 head's draft vocabulary (" + std::to_string(d) +
                              " ids) needs its d2t map, which the checkpoint lacks");
    }
    for (int64_t i = 0; i < d; ++i)
      draft_to_target_[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    return Status::ok_status();
  }
  if (d2t->dtype != DType::kI64 || d2t->shape != std::vector<int64_t>{d}) {
    return invalid_argument("d2t must be i64 [" + std::to_string(d) + "], got " +
                            std::string(dtype_name(d2t->dtype)) + " of " +
                            std::to_string(d2t->numel()) + " values");
  }
  for (int64_t i = 0; i < d; ++i) {
    int64_t offset = 0;
    std::memcpy(&offset, d2t->data + i * 8, 8);  // the file's data need not be 8-byte aligned
    const int64_t id = i + offset;
    if (id < 0 || id >= vocab) {
      return invalid_argument("d2t maps draft id " + std::to_string(i) + " to " +
                              std::to_string(id) + ", outside the target's vocabulary of " +
                              std::to_string(vocab));
    }
    draft_to_target_[static_cast<size_t>(i)] = static_cast<int32_t>(id);
  }
  return Status::ok_status();
}

void EagleDraftModel::plan_activations(DType dtype, int head_tp, int64_t head_rows,
                                       ActivationPlan& plan) {
  const ModelConfig& c = config_.llama;
  const int64_t n = options_.max_num_tokens, rows = options_.max_logit_rows, h = c.hidden_size;
  const bool eagle3 = config_.kind == DraftKind::kEagle3;
  plan.add(eagle3 ? &act_.attn_in : &act_.fc_in, dtype, n, 2 * h);
  plan.add(&act_.embeds, dtype, n, h);
  plan.add(&act_.hidden, dtype, n, h);
  plan.add(&act_.residual, dtype, n, h);
  plan.add(&act_.last_hidden, dtype, rows, h);
  if (eagle3) plan.add(&act_.last_normed, dtype, rows, h);
  plan.add(&act_.logits, DType::kF32, rows, config_.draft_vocab_size);
  if (!eagle3 && head_tp > 1) {  // the target's vocab-parallel head: each rank's part
    plan.add(&act_.head_local, DType::kF32, rows, head_rows);
    plan.add(&act_.head_gathered, DType::kF32, head_tp * rows, head_rows);
  }
  AttentionShape shape = attention_shape(c);
  AttentionBlock::plan_scratch(shape, n, dtype, act_.attention, plan);
  DenseMlp::plan_scratch(c.intermediate_size, n, dtype, act_.mlp, plan);
}

DraftOutput EagleDraftModel::forward(const ForwardBatch& fb, const Tensor& hidden_in,
                                     ModelContext& ctx, const Tensor& out_rows) {
  const ModelConfig& c = config_.llama;
  const int64_t n = fb.num_tokens, h = c.hidden_size, rows = fb.num_logit_rows();
  const double eps = c.rms_norm_eps;
  const bool eagle3 = config_.kind == DraftKind::kEagle3;
  SGL_CHECK(n > 0 && n <= options_.max_num_tokens)
      << "draft pass of " << n << " tokens; the model reserved " << options_.max_num_tokens;
  SGL_CHECK_LE(rows, options_.max_logit_rows);
  SGL_CHECK(hidden_in.ndim() == 2 && hidden_in.size(0) == n &&
            (hidden_in.size(1) == h || hidden_in.size(1) == config_.target_hidden_width()))
      << "draft pass: hidden input " << hidden_in.shape_string() << " for " << n << " tokens";

  const Tensor hidden = act_.hidden.tensor().slice_rows(0, n);
  const Tensor residual = act_.residual.tensor().slice_rows(0, n);
  // A draft step's own output passed on as returned: the residual rows themselves.
  const bool in_residual = hidden_in.raw() == residual.raw();
  const Tensor embeds = act_.embeds.tensor().slice_rows(0, n);
  embed_tokens(*target_.embed_tokens, fb.input_ids, embeds, ctx.stream, ctx.communicator);
  // The head's own layer is whole on every rank at tp > 1 (each computes it alike from the same
  // inputs): it runs without the communicator, which only the target's shared, vocab-parallel
  // embedding and LM head use.
  ModelContext layer_ctx{ctx.attention, ctx.stream};
  if (!eagle3) {
    const Tensor fc_in = act_.fc_in.tensor().slice_rows(0, n);
    kernels::copy_columns(embeds, fc_in, 0, ctx.stream);
    kernels::copy_columns(hidden_in, fc_in, h, ctx.stream);
    fc_.forward(fc_in, hidden, ctx.stream);
    kernels::copy_async(hidden, residual, ctx.stream);
    // No input norm: the attention reads the fc output itself.
    attention_.forward(hidden, rope_cos_sin_, act_.attention, fb, layer_ctx);
  } else {
    // The target's three layers go through the fc; a draft step's own output is already H wide
    // and read where it is.
    Tensor layer_in = hidden_in;
    if (hidden_in.size(1) != h) {
      fc_.forward(hidden_in, hidden, ctx.stream);
      layer_in = hidden;
    } else {
      SGL_CHECK(hidden_in.dtype() == hidden.dtype())
          << "draft pass: hidden input " << dtype_name(hidden_in.dtype()) << ", the model's "
          << dtype_name(hidden.dtype());
    }
    if (!in_residual) kernels::copy_async(layer_in, residual, ctx.stream);
    const Tensor attn_in = act_.attn_in.tensor().slice_rows(0, n);  // [n, 2H]
    kernels::rms_norm(embeds, input_norm_, eps, attn_in.slice_last(0, h), ctx.stream);
    kernels::rms_norm(layer_in, hidden_norm_, eps, attn_in.slice_last(h, h), ctx.stream);
    attention_.forward(attn_in, hidden, rope_cos_sin_, act_.attention, fb, layer_ctx);
  }
  kernels::fused_add_rms_norm(hidden, residual, post_norm_, eps, ctx.stream);
  mlp_.forward(hidden, act_.mlp, ctx.stream);
  // residual += the MLP's output: the layer's output, normed for EAGLE-3's head. EAGLE's head
  // reads it without a norm; the normed rows this leaves in `hidden` go unused.
  kernels::fused_add_rms_norm(hidden, residual, eagle3 ? final_norm_ : post_norm_, eps, ctx.stream);

  Tensor out_hidden = residual, head_in = eagle3 ? hidden : residual;
  if (out_rows.defined()) {
    SGL_CHECK(fb.logits_mode == LogitsMode::kLastPerRequest && out_rows.numel() == rows)
        << "draft pass: out_rows " << out_rows.shape_string() << " for " << rows << " requests";
    out_hidden = act_.last_hidden.tensor().slice_rows(0, rows);
    kernels::embedding(out_rows, residual, out_hidden, ctx.stream);
    head_in = out_hidden;
    if (eagle3) {
      head_in = act_.last_normed.tensor().slice_rows(0, rows);
      kernels::embedding(out_rows, hidden, head_in, ctx.stream);
    }
  } else if (fb.logits_mode == LogitsMode::kLastPerRequest && fb.mode != ForwardMode::kDecode) {
    out_hidden = act_.last_hidden.tensor().slice_rows(0, rows);
    kernels::gather_last_tokens(residual, fb.qo_indptr, out_hidden, ctx.stream);
    head_in = out_hidden;
    if (eagle3) {
      head_in = act_.last_normed.tensor().slice_rows(0, rows);
      kernels::gather_last_tokens(hidden, fb.qo_indptr, head_in, ctx.stream);
    }
  }
  const Tensor logits = act_.logits.tensor().slice_rows(0, rows);
  if (eagle3) {
    lm_head_.forward(head_in, logits, ctx.stream);
  } else {
    lm_head_logits(*target_.lm_head, head_in, act_.head_local.tensor(), act_.head_gathered.tensor(),
                   logits, ctx.stream, ctx.communicator);
  }
  return {.logits = logits, .hidden_states = out_hidden};
}

}  // namespace sgl::model
