// What an EAGLE draft head (EagleDraftRunner) takes beside its target, known before either loads:
// the target leaves room for it when it sizes its KV pool from --mem-fraction-static, as SGLang's
// budget covers the draft worker's weights and KV beside the target's.
#pragma once

#include <cstdint>
#include <filesystem>

#include "attention/kv_pool.h"
#include "core/allocator.h"
#include "core/dtype.h"
#include "core/status.h"
#include "model/model.h"

namespace sgl::runner {

// The head a target will serve drafts with (--speculative-draft-model-path and the tree's
// --speculative-eagle-topk / --speculative-num-steps).
struct DraftHeadOptions {
  std::filesystem::path dir;
  int32_t topk = 1;
  int32_t num_steps = 1;
};

// The target's sizes the head is planned for (ModelRunnerOptions' and the target's context).
struct DraftTargetSizes {
  int64_t max_num_tokens = 0;
  int64_t max_batch_size = 0;
  int64_t context_length = 0;
  int tp_size = 1;
};

// The head's ModelOptions: draft extends and chain steps return a row per request, a tree's
// steps a row per branch (at most max_batch_size of them, or one request's topk).
model::ModelOptions draft_model_options(const DraftTargetSizes& target, int32_t topk);

// The draft KV pool's scratch slots past the target's: a tree's draft steps' frontier nodes, or
// the steps of chains drafted right after their verify.
int64_t draft_scratch_slots(const DraftTargetSizes& target, int32_t topk, int32_t num_steps);

// The draft KV pool's shape for a target pool of `target_slots` slots (its one layer, a slot per
// target slot plus the scratch).
attention::KvPoolShape draft_kv_pool_shape(const model::ModelConfig& head,
                                           const DraftTargetSizes& target, int64_t target_slots,
                                           int32_t topk, int32_t num_steps, DType dtype);

struct DraftHeadMemory {
  int64_t fixed_bytes = 0;        // weights, activations, RoPE table, the scratch slots' K/V
  int64_t bytes_per_kv_slot = 0;  // its KV layer's share of each target slot
};

// The head at options.dir in `dtype`, checked but not loaded (its config and tensors are read,
// nothing is allocated on `allocator`, whose device the weights would live on).
Result<DraftHeadMemory> plan_draft_head_memory(const DraftHeadOptions& options,
                                               const DraftTargetSizes& target, DType dtype,
                                               Allocator& allocator);

}  // namespace sgl::runner
