// Draft head memory planning.
#include "runner/draft_head_memory.h"

#include <algorithm>
#include <memory>

#include "model/eagle_draft_model.h"
#include "model/weight_loader.h"
#include "model/weight_source.h"

namespace sgl::runner {

model::ModelOptions draft_model_options(const DraftTargetSizes& target, int32_t topk) {
  model::ModelOptions options;
  options.max_num_tokens = target.max_num_tokens;
  options.max_logit_rows = std::max<int64_t>(target.max_batch_size, topk);
  options.max_positions = target.context_length;
  return options;
}

int64_t draft_scratch_slots(const DraftTargetSizes& target, int32_t topk, int32_t num_steps) {
  return target.max_batch_size * topk * (num_steps - 1);
}

attention::KvPoolShape draft_kv_pool_shape(const model::ModelConfig& head,
                                           const DraftTargetSizes& target, int64_t target_slots,
                                           int32_t topk, int32_t num_steps, DType dtype) {
  return attention::KvPoolShape{1, target_slots + draft_scratch_slots(target, topk, num_steps),
                                head.num_key_value_heads, head.head_dim, dtype};
}

Result<DraftHeadMemory> plan_draft_head_memory(const DraftHeadOptions& options,
                                               const DraftTargetSizes& target, DType dtype,
                                               Allocator& allocator) {
  SGL_ASSIGN_OR_RETURN(const model::EagleDraftConfig config,
                       model::load_eagle_draft_config(options.dir));
  SGL_ASSIGN_OR_RETURN(std::unique_ptr<model::SafetensorsWeightSource> source,
                       model::SafetensorsWeightSource::open(options.dir));
  model::WeightLoader weights(source.get(), allocator, dtype,
                              backend::Stream{allocator.device(), nullptr});
  SGL_ASSIGN_OR_RETURN(
      const model::ModelMemoryPlan plan,
      model::EagleDraftModel::plan(config, weights, draft_model_options(target, options.topk),
                                   target.tp_size));
  const attention::KvPoolShape kv = draft_kv_pool_shape(config.llama, target, /*target_slots=*/0,
                                                        options.topk, options.num_steps, dtype);
  const auto per_slot = static_cast<int64_t>(kv.bytes_per_token());
  return DraftHeadMemory{.fixed_bytes = plan.total() + kv.num_slots * per_slot,
                         .bytes_per_kv_slot = per_slot};
}

}  // namespace sgl::runner
