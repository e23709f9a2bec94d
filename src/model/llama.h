// LlamaForCausalLM and its close relatives (Mistral, Qwen2 with qkv bias, Qwen3 with q/k norm, and
// their sparse MoE variants Mixtral, Qwen2-MoE, Qwen3-MoE): embedding, decoder layers (attention
// block + dense or MoE MLP), final norm, LM head (tied or not).
#pragma once

#include <memory>
#include <vector>

#include "core/buffer.h"
#include "model/layers/activation_plan.h"
#include "model/layers/decoder_layer.h"
#include "model/layers/linear.h"
#include "model/model.h"
#include "model/weight_loader.h"

namespace sgl::model {

class LlamaForCausalLM final : public Model {
 public:
  // Checks everything before allocating anything: the config's bounds, that `weights` holds
  // every tensor with the shape the config implies (plan()), and that the plan fits the
  // allocator's device (ResourceExhausted naming the sizes otherwise). Then allocates and loads.
  static Result<std::unique_ptr<LlamaForCausalLM>> load(const ModelConfig& config,
                                                        WeightLoader& weights, Allocator& allocator,
                                                        const ModelOptions& options);
  // The checking half of load(): every tensor checked (WeightLoader::set_check_only), nothing
  // read or allocated; returns what load() would allocate.
  static Result<ModelMemoryPlan> plan(const ModelConfig& config, WeightLoader& weights,
                                      const ModelOptions& options);

  const ModelConfig& config() const override { return config_; }
  ModelOutput forward(const ForwardBatch& fb, ModelContext& ctx) override;

 private:
  // Activation scratch, allocated for max_num_tokens rows.
  struct Activations {
    Buffer hidden;       // [N, H]
    Buffer residual;     // f32 [N, H]
    LayerScratch layer;  // the blocks' scratch, shared by every layer
    Buffer last_hidden;  // [max_logit_rows, H]
    Buffer logits;       // f32 [max_logit_rows, V]
  };

  // The config's bounds must have been checked: this builds its layers (nothing allocated).
  LlamaForCausalLM(const ModelConfig& config, const ModelOptions& options);
  Status load_weights(WeightLoader& weights);
  // Declares act_'s buffers, in `dtype` but for the f32 residual stream and logits; `device`
  // sizes the MoE workspace.
  void plan_activations(DType dtype, Device device, ActivationPlan& plan);

  ModelConfig config_;
  ModelOptions options_;
  Linear embed_tokens_;  // [V, H]
  std::vector<DecoderLayer> layers_;
  Buffer final_norm_;    // [H]
  Linear lm_head_;       // [V, H]; empty when tied to embed_tokens_
  Buffer rope_cos_sin_;  // f32 [max_positions, head_dim]
  Activations act_;
};

}  // namespace sgl::model
