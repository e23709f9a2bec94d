// DecoderForCausalLM: checking, loading and the forward pass of the shared decoder stack.
#include "model/decoder_for_causal_lm.h"

#include <algorithm>

#include "backend/backend.h"
#include "kernels/convert_stored.h"
#include "kernels/copy.h"
#include "kernels/gather.h"
#include "kernels/norm_linear.h"
#include "kernels/pooling.h"
#include "model/config_bounds.h"
#include "model/layers/residual_norm.h"
#include "model/model_checks.h"
#include "model/rope_cache.h"

namespace sgl::model {

Result<ModelMemoryPlan> DecoderForCausalLM::check_and_plan(WeightLoader& weights) {
  const ModelConfig& c = config_;
  SGL_RETURN_IF_ERROR(check_config_bounds(c, "model config"));
  SGL_RETURN_IF_ERROR(check_model_options(options_));
  const TensorParallel tp = options_.tp;
  SGL_RETURN_IF_ERROR(check_tensor_parallel(c, tp.size, options_.ep_size));
  if (tp.rank < 0 || tp.rank >= tp.size) {
    return invalid_argument("tensor-parallel rank " + std::to_string(tp.rank) + " of " +
                            std::to_string(tp.size));
  }
  if (options_.ep_size > 1 && !weights.device().is_cpu() &&
      resolve_expert_dispatch(options_.ep_dispatch, weights.device()) ==
          ExpertDispatch::kAllToAll) {  // the exchange is host code
    return unimplemented("--ep-size " + std::to_string(options_.ep_size) + " on " +
                         weights.device().to_string() +
                         ": the token exchange (all-to-all) runs on the CPU only");
  }
  if (options_.max_positions == 0) options_.max_positions = c.max_position_embeddings;
  for (int64_t layer : options_.aux_hidden_state_layers) {
    // Each is captured as the stream entering the next layer (as SGLang does).
    if (layer < 0 || layer + 1 >= c.num_hidden_layers) {
      return invalid_argument("EAGLE-3 capture layer " + std::to_string(layer) + " of a " +
                              std::to_string(c.num_hidden_layers) +
                              "-layer model: capture layers must be in [0, num_layers - 2]");
    }
    if (options_.is_embedding) {
      return invalid_argument("an embedding model captures no hidden states for a draft");
    }
  }
  SGL_RETURN_IF_ERROR(check_lora_configs());
  const Architecture* arch = find_architecture(c.architecture);
  if (arch != nullptr && arch->task_head != TaskHead::kLmHead) {
    if (!options_.is_embedding) {
      return invalid_argument(c.architecture +
                              " scores prompts with its task head and has no LM head: it is "
                              "served as an embedding model (--is-embedding)");
    }
    score_head_.emplace(arch->task_head, c.hidden_size, c.pooled_size());
  }
  // The bounds are checked: the layers can be built (nothing allocated).
  const AttentionShape attention = attention_shape(c, tp);
  layers_.reserve(static_cast<size_t>(c.num_hidden_layers));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    layers_.emplace_back(c.hidden_size, c.rms_norm_eps,
                         AttentionBlock(attention, static_cast<int>(i)), mlp_for_layer(i));
  }

  // sentence-transformers saves an embedding model's decoder as transformers' base model: the
  // causal LM's tensors without their `model.` prefix (SGLang's loaders accept both).
  if (options_.is_embedding && weights.source() != nullptr &&
      !weights.has("model.embed_tokens.weight") && weights.has("embed_tokens.weight")) {
    weight_prefix_ = "";
  }
  const int64_t before = weights.checked_bytes();
  SGL_RETURN_IF_ERROR(check_weights(weights));

  ModelMemoryPlan plan;
  plan.weights = weights.checked_bytes() - before;
  plan.rope_table = options_.max_positions * c.head_dim * static_cast<int64_t>(sizeof(float));
  ActivationPlan activations;
  plan_activations(weights.dtype(), weights.device(), activations);
  plan.activations = activations.bytes();
  return plan;
}

Status DecoderForCausalLM::check_and_load(WeightLoader& weights, Allocator& allocator) {
  const ModelConfig& c = config_;
  if (c.hidden_act != "silu") {
    return unimplemented("hidden_act '" + c.hidden_act + "' (only silu is supported)");
  }
  if (options_.max_positions <= 0) options_.max_positions = c.max_position_embeddings;
  const int64_t positions = options_.max_positions;
  SGL_ASSIGN_OR_RETURN(memory_plan_, check_and_plan(weights));
  SGL_RETURN_IF_ERROR(check_fits(allocator.device(), memory_plan_, positions));
  // The loads are queued; finish() also on failure, so no copy outlives the model's Buffers.
  const Status loaded = load_weights(weights);
  const Status uploaded = weights.finish();
  SGL_RETURN_IF_ERROR(loaded);
  SGL_RETURN_IF_ERROR(uploaded);
  for (size_t i = 0; i < options_.lora_paths.size(); ++i) {
    const LoraAdapterPath& p = options_.lora_paths[i];
    SGL_ASSIGN_OR_RETURN(
        LoraAdapter adapter,
        model::load_lora_adapter(p.name, p.path, lora_configs_[i], lora_shape(), allocator));
    memory_plan_.weights += adapter.nbytes;
    lora_adapters_.push_back(std::move(adapter));
  }

  // RoPE table: computed on the host in f32, uploaded once.
  const std::vector<float> table = compute_rope_cos_sin(c, positions);
  rope_cos_sin_ = Buffer(allocator, DType::kF32, {positions, c.head_dim});
  Tensor host(const_cast<float*>(table.data()), DType::kF32, {positions, c.head_dim});
  kernels::copy(host, rope_cos_sin_, backend::Stream{allocator.device(), nullptr});
  backend::synchronize(backend::Stream{allocator.device(), nullptr});

  ActivationPlan activations;
  plan_activations(weights.dtype(), allocator.device(), activations);
  activations.allocate(allocator);
  return Status::ok_status();
}

Status DecoderForCausalLM::check_weights(WeightLoader& weights) {
  weights.set_check_only(true);
  const Status checked = load_weights(weights);
  weights.set_check_only(false);
  SGL_RETURN_IF_ERROR(checked);
  if (const WeightSource* source = weights.source()) {  // (dummy weights have no names)
    const std::vector<std::string> unread = weights.unread_tensors();
    SGL_RETURN_IF_ERROR(
        check_no_extra_layers(config_, *source, unread, weight_prefix_ + "layers."));
    if (options_.tp.rank == 0) warn_unread_tensors(*source, unread);  // ranks read the same names
  }
  return Status::ok_status();
}

Status DecoderForCausalLM::update_weights(WeightLoader& weights, bool& overwritten) {
  overwritten = false;
  SGL_RETURN_IF_ERROR(check_weights(weights));
  overwritten = true;
  weights.set_in_place(true);
  const Status loaded = load_weights(weights);
  const Status uploaded = weights.finish();
  weights.set_in_place(false);
  SGL_RETURN_IF_ERROR(loaded);
  return uploaded;
}

Result<WeightView> DecoderForCausalLM::find_weight(const std::string& name) {
  // The load run check-only over the loaded Buffers, with no source: it maps every name.
  WeightMap map;
  WeightLoader locate(nullptr, cpu_allocator(), DType::kF32,
                      backend::Stream{Device::cpu(), nullptr});
  locate.set_check_only(true);
  locate.set_weight_map(&map);
  SGL_RETURN_IF_ERROR(load_weights(locate));
  const bool tied_head = name == "lm_head.weight" && config_.tie_word_embeddings;
  const auto it = map.find(tied_head ? weight_prefix_ + "embed_tokens.weight" : name);
  if (it == map.end()) return not_found("the model holds no weight named '" + name + "'");
  const WeightLocation& w = it->second;
  return WeightView{w.slot->tensor().reshape(w.rows).slice_rows(w.first_row, w.num_rows), w.shape,
                    w.slice};
}

// Every tensor is queued before any is waited for (WeightLoader::finish, in check_and_load()).
Status DecoderForCausalLM::load_weights(WeightLoader& w) {
  const ModelConfig& c = config_;
  // The embedding and the LM head are [V, H] tables split by vocabulary rows.
  auto vocab_table = [&](std::string module) {
    return LinearSpec{.modules = {std::move(module)},
                      .out_features = {c.vocab_size},
                      .in_features = c.hidden_size,
                      .shard = ShardRule::kVocab,
                      .tp = options_.tp};
  };
  SGL_RETURN_IF_ERROR(load_linear(w, vocab_table(weight_prefix_ + "embed_tokens"), embed_tokens_));
  for (size_t i = 0; i < layers_.size(); ++i) {
    SGL_RETURN_IF_ERROR(layers_[i].load(w, weight_prefix_ + "layers." + std::to_string(i) + "."));
  }
  SGL_RETURN_IF_ERROR(
      w.store(final_norm_, w.load_norm(weight_prefix_ + "norm.weight", c.hidden_size)));
  // An embedding model pools the final norm's output: an LM head, if the checkpoint has one,
  // would never run.
  if (!c.tie_word_embeddings && !options_.is_embedding) {
    SGL_RETURN_IF_ERROR(load_linear(w, vocab_table("lm_head"), lm_head_));
  } else {
    w.expect_unread("lm_head.weight");
  }
  if (score_head_) SGL_RETURN_IF_ERROR(score_head_->load(w));
  return Status::ok_status();
}

Status DecoderForCausalLM::check_lora_configs() {
  if (!options_.enable_lora && options_.lora_paths.empty()) return Status::ok_status();
  const ModelConfig& c = config_;
  const std::string what = "LoRA adapters (--enable-lora, --lora-paths)";
  if (c.num_experts > 0) {
    return unimplemented(what + " on a Mixture-of-Experts model are not supported yet");
  }
  if (options_.tp.size > 1) return unimplemented(what + " at --tp-size > 1 are not supported yet");
  if (options_.is_embedding) return invalid_argument(what + " on an embedding model");
  if (!options_.aux_hidden_state_layers.empty()) {
    return unimplemented(what + " with an EAGLE-3 draft are not supported yet");
  }
  lora_configs_.clear();
  lora_max_rank_ = 0;  // set below: check_lora_config compares later loads with it
  int64_t largest = 0;
  for (const LoraAdapterPath& p : options_.lora_paths) {
    SGL_ASSIGN_OR_RETURN(LoraConfig config, read_lora_config(p.name, p.path));
    SGL_RETURN_IF_ERROR(check_lora_config(p.name, config));
    largest = std::max(largest, config.r);
    lora_configs_.push_back(std::move(config));
  }
  lora_max_rank_ = options_.max_lora_rank > 0 ? options_.max_lora_rank : largest;
  if (lora_max_rank_ == 0) {
    return invalid_argument(
        "--enable-lora without --lora-paths needs --max-lora-rank: the largest rank of the "
        "adapters /load_lora_adapter will load");
  }
  return Status::ok_status();
}

Status DecoderForCausalLM::check_lora_config(const std::string& name,
                                             const LoraConfig& config) const {
  // --max-lora-rank, else (a later load) the largest rank of the start's adapters; none while
  // those are read without the flag.
  const int64_t limit = options_.max_lora_rank > 0 ? options_.max_lora_rank : lora_max_rank_;
  if (limit > 0 && config.r > limit) {
    return invalid_argument(
        "LoRA adapter '" + name + "' has rank " + std::to_string(config.r) + ", over " +
        (options_.max_lora_rank > 0
             ? "--max-lora-rank " + std::to_string(limit)
             : "the largest this server was started for (" + std::to_string(limit) +
                   "; --max-lora-rank sets it at start)"));
  }
  for (int m = 0; m < kNumLoraModules; ++m) {
    if (config.targets[m] && !options_.lora_target_modules[m]) {
      return invalid_argument("LoRA adapter '" + name + "' targets " +
                              std::string(lora_module_name(static_cast<LoraModule>(m))) +
                              ", which --lora-target-modules leaves out");
    }
  }
  return Status::ok_status();
}

Status DecoderForCausalLM::load_lora_adapter(int32_t id, const LoraAdapterPath& adapter,
                                             Allocator& allocator) {
  if (lora_max_rank_ == 0) {
    return invalid_argument(
        "LoRA is not enabled. Please set `--enable-lora` to enable LoRA.");  // SGLang's words
  }
  SGL_CHECK(id >= 1) << "LoRA adapter id " << id;
  const auto slot = static_cast<size_t>(id - 1);
  SGL_CHECK(slot >= lora_adapters_.size() || lora_adapters_[slot].layers.empty())
      << "LoRA adapter id " << id << " is taken";
  SGL_ASSIGN_OR_RETURN(LoraConfig config, read_lora_config(adapter.name, adapter.path));
  SGL_RETURN_IF_ERROR(check_lora_config(adapter.name, config));
  SGL_ASSIGN_OR_RETURN(
      LoraAdapter loaded,
      model::load_lora_adapter(adapter.name, adapter.path, config, lora_shape(), allocator));
  if (slot >= lora_adapters_.size()) lora_adapters_.resize(slot + 1);
  memory_plan_.weights += loaded.nbytes;
  lora_adapters_[slot] = std::move(loaded);
  return Status::ok_status();
}

void DecoderForCausalLM::unload_lora_adapter(int32_t id) {
  SGL_CHECK(id >= 1 && static_cast<size_t>(id) <= lora_adapters_.size())
      << "LoRA adapter id " << id;
  LoraAdapter& slot = lora_adapters_[static_cast<size_t>(id - 1)];
  memory_plan_.weights -= slot.nbytes;
  slot = LoraAdapter();  // its Buffers freed
}

LoraModelShape DecoderForCausalLM::lora_shape() const {
  const ModelConfig& c = config_;
  const int64_t h = c.hidden_size, q = c.num_attention_heads * c.head_dim,
                kv = c.num_key_value_heads * c.head_dim, i = c.intermediate_size;
  LoraModelShape s;
  s.num_layers = c.num_hidden_layers;
  s.modules = {LoraModuleShape{h, q}, {h, kv}, {h, kv}, {q, h}, {h, i}, {h, i}, {i, h}};
  return s;
}

void DecoderForCausalLM::plan_activations(DType dtype, Device device, ActivationPlan& plan) {
  const ModelConfig& c = config_;
  const int64_t n = options_.max_num_tokens, rows = options_.max_logit_rows;
  // The residual stream stays f32 whatever the activation dtype: bf16 rounding of the running
  // sum is the largest bf16 error source in a deep stack.
  plan.add(&act_.hidden, dtype, n, c.hidden_size);
  plan.add(&act_.residual, DType::kF32, n, c.hidden_size);
  // The norms fold into the blocks after them for a few tokens on CUDA (kernels/norm_linear.h).
  if (device.is_cuda()) {
    plan.add(&act_.residual_spare, DType::kF32, std::min(n, kernels::kNormFoldMaxRows),
             c.hidden_size);
  }
  const TensorParallel tp = options_.tp;
  DecoderLayer::plan_scratch(layers_, attention_shape(c, tp), n, dtype, device,
                             options_.fp32_all_reduce, act_.layer, plan);
  if (options_.is_embedding) {
    plan.add(&act_.embeddings, DType::kF32, rows, c.pooled_size());
    if (score_head_) {
      plan.add(&act_.last_hidden, dtype, rows, c.hidden_size);
      score_head_->plan_scratch(rows, dtype, act_.score, plan);
    }
  } else {
    plan.add(&act_.last_hidden, dtype, rows, c.hidden_size);
    plan.add(&act_.logits, DType::kF32, rows, c.vocab_size);
    if (tp.size > 1) {
      plan.add(&act_.local_logits, DType::kF32, rows, c.vocab_size / tp.size);
      plan.add(&act_.gathered_logits, DType::kF32, tp.size * rows, c.vocab_size / tp.size);
    }
  }
  if (const auto k = static_cast<int64_t>(options_.aux_hidden_state_layers.size()); k > 0) {
    plan.add(&act_.aux_stream, DType::kF32, n, k * c.hidden_size);
    plan.add(&act_.aux_last, DType::kF32, rows, k * c.hidden_size);
    if (dtype != DType::kF32) plan.add(&act_.aux_out, dtype, n, k * c.hidden_size);
  }
  if (lora_max_rank_ > 0) plan.add(&act_.lora_shrunk, DType::kF32, n, lora_max_rank_);
  if (options_.enable_return_routed_experts) {
    int64_t sparse_layers = 0, top_k = 0;
    for (const DecoderLayer& layer : layers_) {
      if (const MoeMlp* moe = layer.moe_mlp()) {
        ++sparse_layers;
        top_k = moe->shape().top_k;  // plan_scratch checks the sparse layers share one shape
      }
    }
    if (sparse_layers > 0) plan.add(&act_.routed_experts, DType::kI32, sparse_layers * n, top_k);
  }
}

Tensor DecoderForCausalLM::aux_hidden_output(const Tensor& captured, const ForwardBatch& fb,
                                             backend::Stream stream) const {
  const int64_t rows = fb.num_hidden_rows();
  Tensor out = captured;
  if (rows != fb.num_tokens) {  // the logits rows of an extend: each request's last token
    out = act_.aux_last.tensor().slice_rows(0, rows);
    kernels::gather_last_tokens(captured, fb.qo_indptr, out, stream);
  }
  if (!act_.aux_out.tensor().defined()) return out;  // an f32 model
  const Tensor converted = act_.aux_out.tensor().slice_rows(0, rows);
  kernels::convert_stored(out.raw(), kernels::StoredFormat::kF32, converted, stream);
  return converted;
}

EmbedAndHead DecoderForCausalLM::embed_and_head() const {
  if (options_.is_embedding) return {};
  const Linear& head = config_.tie_word_embeddings ? embed_tokens_ : lm_head_;
  return {.embed_tokens = &embed_tokens_, .lm_head = &head};
}

ModelOutput DecoderForCausalLM::forward(const ForwardBatch& fb, ModelContext& ctx) {
  const int64_t n = fb.num_tokens;
  SGL_CHECK(n > 0 && n <= options_.max_num_tokens)
      << "forward of " << n << " tokens; the model reserved " << options_.max_num_tokens;
  const int64_t rows = fb.num_logit_rows();
  SGL_CHECK_LE(rows, options_.max_logit_rows);

  const Tensor hidden = act_.hidden.tensor().slice_rows(0, n);
  ResidualStream residual{.current = act_.residual.tensor().slice_rows(0, n), .spare = Tensor()};
  const LoraBatch lora = lora_adapters_.empty()
                             ? LoraBatch()
                             : LoraBatch(lora_adapters_, fb, act_.lora_shrunk.tensor());
  // On CUDA a few tokens' norms fold into the projections after them; not under a LoRA update,
  // which reads the normed input.
  if (n <= kernels::kNormFoldMaxRows && act_.residual_spare.tensor().defined() && lora.empty()) {
    residual.spare = act_.residual_spare.tensor().slice_rows(0, n);
  }
  embed_tokens(embed_tokens_, fb.input_ids, hidden, ctx.stream, ctx.communicator);
  // The first layer starts the residual stream.
  kernels::zero(residual.current, ctx.stream);
  const std::vector<int64_t>& aux_layers = options_.aux_hidden_state_layers;
  const bool capture_aux =
      !aux_layers.empty() && fb.capture_hidden_mode != CaptureHiddenMode::kNull;
  const Tensor aux_stream = capture_aux ? act_.aux_stream.tensor().slice_rows(0, n) : Tensor();
  std::vector<StreamCapture> captures;
  int64_t sparse_layers = 0;    // recorded so far
  bool hidden_partial = false;  // a layer's output left as the rank's partial sum
  for (size_t i = 0; i < layers_.size(); ++i) {
    const DecoderLayer& layer = layers_[i];
    captures.clear();
    for (size_t j = 0; capture_aux && j < aux_layers.size(); ++j) {
      if (static_cast<size_t>(aux_layers[j]) + 1 == i) {
        captures.push_back({aux_stream, static_cast<int64_t>(j) * config_.hidden_size});
      }
    }
    hidden_partial = layer.forward(hidden, hidden_partial, residual, rope_cos_sin_, act_.layer, fb,
                                   ctx, captures, &lora);
    if (act_.routed_experts.tensor().defined() && layer.moe_mlp() != nullptr) {
      const Tensor ids = act_.layer.moe_mlp.topk_ids.tensor().slice_rows(0, n);
      kernels::copy_async(ids, act_.routed_experts.tensor().slice_rows(sparse_layers * n, n),
                          ctx.stream);
      ++sparse_layers;
    }
  }
  reduce_add_rms_norm(hidden, residual.current, final_norm_, config_.rms_norm_eps, hidden_partial,
                      ctx.communicator, ctx.stream);

  if (fb.pooling != PoolingType::kNone) {
    SGL_CHECK(options_.is_embedding)
        << "a pooling batch needs a model loaded as an embedding model";
    const Tensor pooled = act_.embeddings.tensor().slice_rows(0, fb.batch_size);
    if (score_head_) {
      SGL_CHECK(fb.pooling == PoolingType::kLast) << "a score head reads each request's last token";
      const Tensor last = act_.last_hidden.tensor().slice_rows(0, fb.batch_size);  // [B, H]
      kernels::gather_last_tokens(hidden, fb.qo_indptr, last, ctx.stream);
      score_head_->forward(last, pooled, act_.score, ctx.stream);
    } else {
      const kernels::RowPool pool =
          fb.pooling == PoolingType::kMean ? kernels::RowPool::kSum : kernels::RowPool::kLast;
      kernels::pool_rows(hidden, fb.qo_indptr, pool, pooled, ctx.stream);
    }
    ModelOutput out;
    out.embeddings = pooled;
    if (sparse_layers > 0) {
      out.routed_experts = act_.routed_experts.tensor().slice_rows(0, sparse_layers * n);
    }
    return out;
  }
  SGL_CHECK(!options_.is_embedding) << "an embedding model has no LM head: it runs pooling batches";

  Tensor head_in = hidden;
  if (fb.logits_mode == LogitsMode::kLastPerRequest && fb.mode != ForwardMode::kDecode) {
    head_in = act_.last_hidden.tensor().slice_rows(0, rows);
    kernels::gather_last_tokens(hidden, fb.qo_indptr, head_in, ctx.stream);
  }
  const Linear& head = config_.tie_word_embeddings ? embed_tokens_ : lm_head_;
  const Tensor logits = act_.logits.tensor().slice_rows(0, rows);
  lm_head_logits(head, head_in, act_.local_logits, act_.gathered_logits, logits, ctx.stream,
                 ctx.communicator);
  ModelOutput out;
  out.logits = logits;
  if (fb.capture_hidden_mode == CaptureHiddenMode::kLast) out.hidden_states = head_in;
  if (fb.capture_hidden_mode == CaptureHiddenMode::kFull) out.hidden_states = hidden;
  if (capture_aux) out.aux_hidden_states = aux_hidden_output(aux_stream, fb, ctx.stream);
  if (sparse_layers > 0) {
    out.routed_experts = act_.routed_experts.tensor().slice_rows(0, sparse_layers * n);
  }
  return out;
}

}  // namespace sgl::model
