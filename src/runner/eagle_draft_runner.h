// EagleDraftRunner: an EAGLE draft head beside its target (SGLang's draft ModelRunner): the head
// on the target's device and dtype, sharing the target's embedding (and EAGLE's LM head), with a
// one-layer KV pool of as many slots as the target's, so a token's draft K/V sits at the slot
// index of its target K/V and one req_to_token table serves both.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "attention/attention_backend.h"
#include "attention/kv_pool.h"
#include "core/status.h"
#include "forward/forward_batch.h"
#include "model/eagle_draft_model.h"
#include "runner/draft_head_memory.h"
#include "runner/model_runner.h"

namespace sgl::runner {

// The target layers an EAGLE-3 head at `draft_dir` reads (its config's
// eagle_aux_hidden_state_layer_ids, else SGLang's default for the target at `target_path`, its
// config with `target_overrides` (--json-model-override-args)): what
// ModelRunnerOptions::aux_hidden_state_layers must hold before the target loads.
Result<std::vector<int64_t>> eagle3_capture_layers(const std::filesystem::path& draft_dir,
                                                   const std::filesystem::path& target_path,
                                                   const std::string& target_overrides = {});

class EagleDraftRunner {
 public:
  // Loads the head at `dir`, which must be of `kind` (kEagle or kEagle3, what
  // --speculative-algorithm asked for). `target` must outlive the runner; an EAGLE-3 target
  // must capture the head's layers (eagle3_capture_layers). `topk` and `num_steps` are the
  // draft's --speculative-eagle-topk and --speculative-num-steps: tree drafts (topk > 1) keep
  // their draft steps' K/V in scratch slots past the target's.
  static Result<std::unique_ptr<EagleDraftRunner>> create(const std::filesystem::path& dir,
                                                          model::DraftKind kind,
                                                          ModelRunner& target, int32_t topk = 1,
                                                          int32_t num_steps = 1);

  const model::EagleDraftConfig& config() const { return model_->config(); }
  ModelRunner& target() { return target_; }
  // EAGLE-3's draft-vocabulary id -> target id map (empty for EAGLE: the target's vocabulary).
  std::span<const int32_t> draft_to_target() const { return model_->draft_to_target(); }
  // The same map where the draft's passes run (null for EAGLE).
  const int32_t* draft_to_target_table() const {
    return draft_to_target_table_.tensor().defined() ? draft_to_target_table_.data<int32_t>()
                                                     : nullptr;
  }

  int32_t topk() const { return topk_; }
  int32_t num_steps() const { return num_steps_; }
  // The first of the draft pool's scratch slots, max_batch_size * topk * (num_steps - 1) of
  // them: a tree's draft steps' frontier nodes, or the steps of chains drafted right after
  // their verify; each read by the steps after it only.
  int32_t scratch_slot_base() const { return scratch_slot_base_; }
  attention::AttentionBackend& attention() { return *attention_; }
  // What the head took, as plan_draft_head_memory planned it before the target's KV pool.
  DraftHeadMemory memory() const;

  // One draft pass on the target's stream (the head's K/V stored at fb's slots); hidden_in as
  // model::EagleDraftModel::forward takes it. Valid until the next forward.
  model::DraftOutput forward(const ForwardBatch& fb, const Tensor& hidden_in);
  // forward() without planning the attention (done before, outside a graph capture); out_rows
  // as model::EagleDraftModel::forward takes them.
  model::DraftOutput forward_planned(const ForwardBatch& fb, const Tensor& hidden_in,
                                     const Tensor& out_rows = {});
  // ids [n] = each row's greedy draft of `logits` [n <= max_batch_size, draft vocab] as a
  // target id (the argmax, draft_to_target applied), on the device, queued on the target's
  // stream; graph-capturable.
  void greedy_ids(const Tensor& logits, const Tensor& ids);

 private:
  explicit EagleDraftRunner(ModelRunner& target) : target_(target) {}

  ModelRunner& target_;
  int32_t topk_ = 1;
  int32_t num_steps_ = 1;
  int32_t scratch_slot_base_ = 0;
  Buffer draft_to_target_table_;  // i32 [draft vocab] on the device (EAGLE-3): greedy_ids' id map
  std::unique_ptr<model::EagleDraftModel> model_;
  std::unique_ptr<attention::KvPool> kv_pool_;
  std::unique_ptr<attention::AttentionBackend> attention_;
};

}  // namespace sgl::runner
