// LlamaForCausalLM and its close relatives (Mistral, Qwen2 with qkv bias, Qwen3 with q/k norm).
#pragma once

#include <memory>
#include <vector>

#include "core/buffer.h"
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
  struct Layer {
    Buffer input_norm;    // [H]
    Buffer qkv_proj;      // [q_size + 2 * kv_size, H]
    Buffer qkv_bias;      // [q_size + 2 * kv_size] (attention_bias only)
    Buffer q_norm;        // [head_dim] (qk_norm only)
    Buffer k_norm;        // [head_dim] (qk_norm only)
    Buffer o_proj;        // [H, q_size]
    Buffer post_norm;     // [H]
    Buffer gate_up_proj;  // [2 * I, H]
    Buffer down_proj;     // [H, I]
  };
  // Activation scratch, allocated for max_num_tokens rows.
  struct Activations {
    Buffer hidden;       // [N, H]
    Buffer residual;     // [N, H]
    Buffer qkv;          // [N, q_size + 2 * kv_size]
    Buffer attn_out;     // [N, q_size]
    Buffer gate_up;      // [N, 2 * I]
    Buffer mlp_act;      // [N, I]
    Buffer last_hidden;  // [max_logit_rows, H]
    Buffer logits;       // f32 [max_logit_rows, V]
  };

  // One activation buffer: which member, its dtype and [rows, cols].
  struct ActivationSpec {
    Buffer Activations::*buffer;
    DType dtype;
    int64_t rows;
    int64_t cols;
  };

  LlamaForCausalLM(const ModelConfig& config, const ModelOptions& options)
      : config_(config), options_(options) {}
  Status load_weights(WeightLoader& weights);
  std::vector<ActivationSpec> activation_specs(DType dtype) const;
  void allocate_activations(Allocator& allocator);
  void run_layer(int index, const Layer& layer, int64_t num_tokens, const ForwardBatch& fb,
                 ModelContext& ctx);

  ModelConfig config_;
  ModelOptions options_;
  Buffer embed_tokens_;  // [V, H]
  std::vector<Layer> layers_;
  Buffer final_norm_;    // [H]
  Buffer lm_head_;       // [V, H]; empty when tied to embed_tokens_
  Buffer rope_cos_sin_;  // f32 [max_positions, head_dim]
  Activations act_;
};

}  // namespace sgl::model
