// EagleDraftRunner.
#include "runner/eagle_draft_runner.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/logging.h"
#include "kernels/argmax.h"
#include "kernels/copy.h"
#include "model/model_source.h"
#include "model/weight_source.h"

namespace sgl::runner {
namespace {

const char* kind_name(model::DraftKind kind) {
  return kind == model::DraftKind::kEagle3 ? "EAGLE3 (LlamaForCausalLMEagle3)"
                                           : "EAGLE (LlamaForCausalLMEagle)";
}

}  // namespace

Result<std::vector<int64_t>> eagle3_capture_layers(const std::filesystem::path& draft_dir,
                                                   const std::filesystem::path& target_path,
                                                   const std::string& target_overrides) {
  SGL_ASSIGN_OR_RETURN(const model::EagleDraftConfig config,
                       model::load_eagle_draft_config(draft_dir));
  if (!config.aux_hidden_state_layer_ids.empty()) return config.aux_hidden_state_layer_ids;
  model::ModelSourceOptions options;
  options.open_weights = false;
  options.config_overrides = target_overrides;
  SGL_ASSIGN_OR_RETURN(const model::ModelSource target,
                       model::open_model_source(target_path, options));
  return model::default_eagle3_aux_layers(target.config.num_hidden_layers);
}

Result<std::unique_ptr<EagleDraftRunner>> EagleDraftRunner::create(const std::filesystem::path& dir,
                                                                   model::DraftKind kind,
                                                                   ModelRunner& target,
                                                                   int32_t topk,
                                                                   int32_t num_steps) {
  SGL_ASSIGN_OR_RETURN(const model::EagleDraftConfig config, model::load_eagle_draft_config(dir));
  if (config.kind != kind) {
    return invalid_argument("--speculative-draft-model-path " + dir.string() + " is an " +
                            kind_name(config.kind) + " head; --speculative-algorithm asked for " +
                            kind_name(kind));
  }
  const model::ModelConfig& t = target.config();
  if (config.llama.vocab_size != t.vocab_size) {
    return invalid_argument("draft head " + dir.string() + ": vocab_size " +
                            std::to_string(config.llama.vocab_size) + " is not the target's " +
                            std::to_string(t.vocab_size));
  }
  if (kind == model::DraftKind::kEagle3 &&
      static_cast<int64_t>(target.options().aux_hidden_state_layers.size()) != 3) {
    return invalid_argument("an EAGLE-3 target must capture three layers for its draft head");
  }
  if (topk > config.draft_vocab_size) {
    return invalid_argument("--speculative-eagle-topk " + std::to_string(topk) +
                            " exceeds the draft head's vocabulary (" +
                            std::to_string(config.draft_vocab_size) + ")");
  }
  SGL_ASSIGN_OR_RETURN(std::unique_ptr<model::SafetensorsWeightSource> source,
                       model::SafetensorsWeightSource::open(dir));
  std::unique_ptr<EagleDraftRunner> runner(new EagleDraftRunner(target));
  const ModelRunnerOptions& o = target.options();
  model::WeightLoader weights(source.get(), target.allocator(), target.compute_dtype(),
                              target.stream());
  const DraftTargetSizes sizes = target.draft_target_sizes();
  SGL_ASSIGN_OR_RETURN(runner->model_,
                       model::EagleDraftModel::load(config, weights, target.allocator(),
                                                    draft_model_options(sizes, topk),
                                                    target.model().embed_and_head()));
  const model::ModelConfig& c = config.llama;
  SGL_CHECK(topk >= 1 && num_steps >= 1) << "topk " << topk << ", num_steps " << num_steps;
  runner->topk_ = topk;
  runner->num_steps_ = num_steps;
  runner->scratch_slot_base_ = static_cast<int32_t>(target.num_kv_slots());
  runner->kv_pool_ = std::make_unique<attention::KvPool>(
      target.allocator(), draft_kv_pool_shape(c, sizes, target.num_kv_slots(), topk, num_steps,
                                              target.compute_dtype()));
  const std::span<const int32_t> to_target = runner->model_->draft_to_target();
  if (!to_target.empty()) {
    const auto n = static_cast<int64_t>(to_target.size());
    runner->draft_to_target_table_ = Buffer(target.allocator(), DType::kI32, {n});
    kernels::copy(Tensor(const_cast<int32_t*>(to_target.data()), DType::kI32, {n}),
                  runner->draft_to_target_table_, target.stream());
  }
  const attention::AttentionConfig attn{.num_q_heads = c.num_attention_heads,
                                        .num_kv_heads = c.num_key_value_heads,
                                        .head_dim = c.head_dim,
                                        .scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim)),
                                        .projection_rows = c.hidden_size,
                                        .dtype = target.compute_dtype()};
  SGL_ASSIGN_OR_RETURN(runner->attention_,
                       attention::create_attention_backend(o.attention_backend, o.device, attn,
                                                           *runner->kv_pool_, target.stream()));
  // Logged once: by rank 0 under tensor parallelism, where every rank loads a head.
  if (target.tp_group() == nullptr || target.tp_group()->rank() == 0) {
    SGL_LOG_INFO << "speculative draft: " << kind_name(kind) << " head from " << dir.string()
                 << ", draft vocabulary " << config.draft_vocab_size << ", KV "
                 << target.num_kv_slots() << " slots";
  }
  return runner;
}

DraftHeadMemory EagleDraftRunner::memory() const {
  const attention::KvPoolShape& kv = kv_pool_->shape();
  const auto per_slot = static_cast<int64_t>(kv.bytes_per_token());
  return {.fixed_bytes =
              model_->memory_plan().total() + (kv.num_slots - target_.num_kv_slots()) * per_slot,
          .bytes_per_kv_slot = per_slot};
}

model::DraftOutput EagleDraftRunner::forward(const ForwardBatch& fb, const Tensor& hidden_in) {
  attention_->plan(fb);
  return forward_planned(fb, hidden_in);
}

model::DraftOutput EagleDraftRunner::forward_planned(const ForwardBatch& fb,
                                                     const Tensor& hidden_in,
                                                     const Tensor& out_rows) {
  model::ModelContext ctx{*attention_, target_.stream(), target_.tp_group()};
  return model_->forward(fb, hidden_in, ctx, out_rows);
}

void EagleDraftRunner::greedy_ids(const Tensor& logits, const Tensor& ids) {
  const int64_t n = logits.size(0);
  SGL_CHECK(ids.numel() == n) << "greedy_ids: " << n << " rows into " << ids.shape_string();
  // EAGLE-3: through the draft-to-target table (undefined for EAGLE).
  kernels::argmax_rows(logits, ids.reshape({n}), target_.stream(), draft_to_target_table_.tensor());
}

}  // namespace sgl::runner
