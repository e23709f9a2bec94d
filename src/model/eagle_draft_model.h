// EagleDraftModel: an EAGLE draft head as SGLang loads it (LlamaForCausalLMEagle for EAGLE-1/2,
// LlamaForCausalLMEagle3 for EAGLE-3): one Llama decoder layer that reads the target's hidden
// states beside the token embeddings and predicts the next token, sharing the target's
// embedding table (and, for EAGLE, its LM head). With a tensor-parallel target each rank holds
// the whole head (its layer, fc and EAGLE-3 LM head) and computes it alike, while the shared
// embedding and LM head are the target's vocab-parallel ones, run with the rank's collectives.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "core/allocator.h"
#include "core/buffer.h"
#include "core/status.h"
#include "model/architectures.h"
#include "model/layers/activation_plan.h"
#include "model/layers/attention_block.h"
#include "model/layers/dense_mlp.h"
#include "model/layers/linear.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/weight_loader.h"

namespace sgl::model {

// A draft head's config.json: a Llama config plus what EAGLE adds.
struct EagleDraftConfig {
  DraftKind kind = DraftKind::kNone;
  ModelConfig llama;  // the decoder layer's sizes, RoPE, vocab_size (the target's vocabulary)
  // Rows of the head's LM head: EAGLE-3's `draft_vocab_size` (its own head over a reduced
  // vocabulary); the target's vocabulary for EAGLE (the target's head).
  int64_t draft_vocab_size = 0;
  // EAGLE-3: the target layers whose output hidden states its fc reads, in order (the config's
  // `eagle_config.eagle_aux_hidden_state_layer_ids`; SGLang captures each one as the input of
  // the next layer). Empty: SGLang's default for the target's depth, which the caller resolves.
  std::vector<int64_t> aux_hidden_state_layer_ids;

  // Width of the target hidden states a first draft pass reads: 3 * H for EAGLE-3, H for EAGLE.
  int64_t target_hidden_width() const {
    return (kind == DraftKind::kEagle3 ? 3 : 1) * llama.hidden_size;
  }
};

// Reads `<dir>/config.json`; InvalidArgument when it is not an EAGLE head's.
Result<EagleDraftConfig> load_eagle_draft_config(const std::filesystem::path& dir);

// SGLang's default EAGLE-3 capture layers for a target of `num_layers` layers: [2, L/2, L-3]
// as layer inputs, i.e. the outputs of layers 1, L/2 - 1 and L - 4.
std::vector<int64_t> default_eagle3_aux_layers(int64_t num_layers);

// One draft pass's result, in memory the model owns, valid until its next forward.
struct DraftOutput {
  Tensor logits;  // f32 [fb.num_logit_rows(), draft_vocab_size]
  // [fb.num_logit_rows(), H]: the layer's output before any final norm, which the next draft
  // step reads as its hidden input.
  Tensor hidden_states;
};

class EagleDraftModel {
 public:
  // Checks the head's tensors against its config and the target's shared weights (their
  // [V, H] must match), allocates on `allocator` and loads. `target` must outlive the model.
  static Result<std::unique_ptr<EagleDraftModel>> load(const EagleDraftConfig& config,
                                                       WeightLoader& weights, Allocator& allocator,
                                                       const ModelOptions& options,
                                                       const EmbedAndHead& target);

  // The device memory load() would take, from the head's tensors checked in `weights` (set
  // check-only here: nothing is read or allocated) and its activations for `options`, beside a
  // target whose LM head is split over `target_tp` ranks: a target sizes its KV pool by it
  // before the head loads.
  static Result<ModelMemoryPlan> plan(const EagleDraftConfig& config, WeightLoader& weights,
                                      const ModelOptions& options, int target_tp);

  const EagleDraftConfig& config() const { return config_; }
  ModelMemoryPlan memory_plan() const { return memory_plan_; }
  // The target vocabulary id of each draft-vocabulary id (EAGLE-3's d2t applied:
  // id + d2t[id]); empty for EAGLE, whose head is the target's.
  std::span<const int32_t> draft_to_target() const { return draft_to_target_; }

  // One draft pass over fb (its K/V stored through ctx.attention as the draft's layer 0;
  // ctx.communicator: the target's tensor-parallel rank's, for the shared embedding and head).
  // hidden_in: [fb.num_tokens, W], each token's hidden input: the target's (W =
  // config().target_hidden_width(): EAGLE the final norm's output, EAGLE-3 the captured layers
  // concatenated) or a previous draft step's DraftOutput::hidden_states (W = H), which may be
  // passed on as returned (this model's rows, read before the pass overwrites them).
  // out_rows (optional, i32 [fb.batch_size], with LogitsMode::kLastPerRequest): the token row
  // each request's logits and hidden state come from, instead of its last (a draft extend over
  // a whole verify pass reads each accepted path's end).
  DraftOutput forward(const ForwardBatch& fb, const Tensor& hidden_in, ModelContext& ctx,
                      const Tensor& out_rows = {});

 private:
  struct Activations {
    Buffer fc_in;        // [N, 2H]: EAGLE's concat(embedding, hidden)
    Buffer embeds;       // [N, H]
    Buffer attn_in;      // [N, 2H]: EAGLE-3's concat(norm(embedding), norm(hidden))
    Buffer hidden;       // [N, H]
    Buffer residual;     // [N, H], in the activation dtype: the head's output feeds its LM head
    Buffer last_hidden;  // [max_logit_rows, H]
    Buffer last_normed;  // [max_logit_rows, H] (EAGLE-3)
    Buffer logits;       // f32 [max_logit_rows, draft vocab]
    // EAGLE at tp > 1: the target's head's vocabulary part of each row, and every rank's.
    Buffer head_local;     // f32 [max_logit_rows, V / tp]
    Buffer head_gathered;  // f32 [tp x max_logit_rows, V / tp]
    AttentionBlock::Scratch attention;
    DenseMlp::Scratch mlp;
  };

  EagleDraftModel(const EagleDraftConfig& config, const ModelOptions& options,
                  const EmbedAndHead& target);
  Status load_weights(WeightLoader& weights);
  Status load_draft_to_target(const WeightSource* source);
  // The target's LM head, split over head_tp ranks of head_rows rows each (EAGLE at tp > 1
  // gathers its parts).
  void plan_activations(DType dtype, int head_tp, int64_t head_rows, ActivationPlan& plan);
  // Checks the weights (check-only) and plans the memory, activations included.
  Result<ModelMemoryPlan> check_and_plan(WeightLoader& weights, int head_tp, int64_t head_rows,
                                         ActivationPlan& activations);

  EagleDraftConfig config_;
  ModelOptions options_;
  EmbedAndHead target_;
  Linear fc_;  // [H, 2H] + bias (EAGLE) or [H, 3H] (EAGLE-3)
  AttentionBlock attention_;
  Buffer input_norm_;   // [H] (EAGLE-3: the embeddings' norm)
  Buffer hidden_norm_;  // [H] (EAGLE-3)
  Buffer post_norm_;    // [H]
  DenseMlp mlp_;
  Buffer final_norm_;  // [H] (EAGLE-3)
  Linear lm_head_;     // [draft vocab, H] (EAGLE-3)
  std::vector<int32_t> draft_to_target_;
  Buffer rope_cos_sin_;  // f32 [max_positions, head_dim]
  Activations act_;
  ModelMemoryPlan memory_plan_;
};

}  // namespace sgl::model
