// DecoderForCausalLM: the decoder stack the Llama-family architectures share: embedding ->
// N x DecoderLayer (pre-norm attention block + MLP block) -> final norm -> LM head (tied or not),
// or, loaded as an embedding model, -> pooling of the final norm's output per request (no LM
// head), or, for a classification or reward architecture, its score head over each request's
// last token. An architecture is a subclass that says what its layers' MLPs are (llama.h, ...).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/allocator.h"
#include "core/buffer.h"
#include "core/status.h"
#include "model/layers/activation_plan.h"
#include "model/layers/decoder_layer.h"
#include "model/layers/linear.h"
#include "model/layers/score_head.h"
#include "model/model.h"
#include "model/weight_loader.h"

namespace sgl::model {

class DecoderForCausalLM : public Model {
 public:
  // Loads architecture M (a subclass that befriends this class). Checks everything before
  // allocating anything: the config's bounds, that `weights` holds every tensor with the shape
  // the config implies (plan()), and that the plan fits the allocator's device
  // (ResourceExhausted naming the sizes otherwise). Then allocates and loads.
  template <class M>
  static Result<std::unique_ptr<Model>> load(const ModelConfig& config, WeightLoader& weights,
                                             Allocator& allocator, const ModelOptions& options) {
    std::unique_ptr<M> model(new M(config, options));
    SGL_RETURN_IF_ERROR(model->check_and_load(weights, allocator));
    return std::unique_ptr<Model>(std::move(model));
  }
  // The checking half of load<M>(): every tensor checked (WeightLoader::set_check_only), nothing
  // read or allocated; returns what load() would allocate.
  template <class M>
  static Result<ModelMemoryPlan> plan(const ModelConfig& config, WeightLoader& weights,
                                      const ModelOptions& options) {
    M probe(config, options);
    return probe.check_and_plan(weights);
  }

  const ModelConfig& config() const override { return config_; }
  ModelMemoryPlan memory_plan() const override { return memory_plan_; }
  ModelOutput forward(const ForwardBatch& fb, ModelContext& ctx) override;
  EmbedAndHead embed_and_head() const override;
  Status update_weights(WeightLoader& weights, bool& overwritten) override;
  Result<WeightView> find_weight(const std::string& name) override;
  Status load_lora_adapter(int32_t id, const LoraAdapterPath& adapter,
                           Allocator& allocator) override;
  void unload_lora_adapter(int32_t id) override;

 protected:
  // Builds nothing: the layers are built once the config's bounds have been checked.
  DecoderForCausalLM(const ModelConfig& config, const ModelOptions& options)
      : config_(config), options_(options) {}

  // What an architecture decides: layer `layer`'s MLP block (a DenseMlp, or a MoeMlp with its
  // experts' weight names and routing), sized from config(), whose bounds have been checked, at
  // tensor-parallel rank tp() with ep_size() expert groups (which check_tensor_parallel has
  // accepted).
  virtual Mlp mlp_for_layer(int64_t layer) const = 0;
  TensorParallel tp() const { return options_.tp; }
  int ep_size() const { return options_.ep_size; }  // check_expert_parallel has accepted it
  ExpertDispatch ep_dispatch() const { return options_.ep_dispatch; }

 private:
  // Activation scratch, allocated for max_num_tokens rows.
  struct Activations {
    Buffer hidden;          // [N, H]
    Buffer residual;        // f32 [N, H]
    Buffer residual_spare;  // f32 [min(N, kNormFoldMaxRows), H], on CUDA: ResidualStream::spare
    LayerScratch layer;     // the blocks' scratch, shared by every layer
    // i32 [num_sparse_layers * N, top_k], only with options_.enable_return_routed_experts
    Buffer routed_experts;
    Buffer last_hidden;  // [max_logit_rows, H]; generation models and score heads only
    Buffer logits;       // f32 [max_logit_rows, V]; generation models only
    // At tp > 1, generation models only: the rank's vocabulary part of the logits, f32
    // [max_logit_rows, V / tp], and every rank's gathered, f32 [tp * max_logit_rows, V / tp].
    Buffer local_logits;
    Buffer gathered_logits;
    // Embedding models only: f32 [max_logit_rows, config_.pooled_size()] (a score head's
    // outputs, else the pooled hidden states); with a score head, last_hidden holds its input.
    Buffer embeddings;
    ScoreHead::Scratch score;
    // With ModelOptions::aux_hidden_state_layers (K of them): the captured residual streams.
    Buffer aux_stream;   // f32 [N, K * H]
    Buffer aux_last;     // f32 [max_logit_rows, K * H]: the logits rows' of an extend
    Buffer aux_out;      // [N, K * H] in the activation dtype; unless that is f32
    Buffer lora_shrunk;  // f32 [N, the adapters' largest rank], with LoRA adapters
  };

  // With ModelOptions::enable_lora: what LoRA needs of the model and options; the start's
  // adapters' configs (lora_paths) read into lora_configs_ and checked (check_lora_config);
  // sets lora_max_rank_, which sizes the scratch.
  Status check_lora_configs();
  // An adapter's rank and modules within max_lora_rank (the scratch's) and lora_target_modules.
  Status check_lora_config(const std::string& name, const LoraConfig& config) const;
  // Each projection's size for the adapters.
  LoraModelShape lora_shape() const;
  // plan(): checks the config's bounds and the options, builds the layers, checks every tensor.
  Result<ModelMemoryPlan> check_and_plan(WeightLoader& weights);
  // Every tensor there with its shape (nothing read), no layer past the config's; warns of the
  // checkpoint's tensors the model does not read.
  Status check_weights(WeightLoader& weights);
  // load(): check_and_plan(), the fit on the device, then allocation and loading.
  Status check_and_load(WeightLoader& weights, Allocator& allocator);
  Status load_weights(WeightLoader& weights);
  // Declares act_'s buffers, in `dtype` but for the f32 residual stream and logits; `device`
  // sizes the MoE workspace.
  void plan_activations(DType dtype, Device device, ActivationPlan& plan);
  // ModelOutput::aux_hidden_states from the captured streams (f32 [n, K * H]).
  Tensor aux_hidden_output(const Tensor& captured, const ForwardBatch& fb,
                           backend::Stream stream) const;

  ModelConfig config_;
  ModelOptions options_;
  // Where the decoder's tensors sit in the checkpoint: "model." (a causal LM's), or "" for an
  // embedding model stored as the bare decoder. Set by check_and_plan().
  std::string weight_prefix_ = "model.";
  Linear embed_tokens_;  // [V, H]
  std::vector<DecoderLayer> layers_;
  Buffer final_norm_;  // [H]
  Linear lm_head_;     // [V, H]; empty when tied to embed_tokens_ or an embedding model
  std::optional<ScoreHead> score_head_;  // a classification or reward architecture's
  Buffer rope_cos_sin_;                  // f32 [max_positions, head_dim]
  Activations act_;
  std::vector<LoraConfig> lora_configs_;  // ModelOptions::lora_paths', in order
  // Adapter id i at [i - 1]: lora_paths' first, then load_lora_adapter's; an unloaded one's
  // slot is empty (no layers) until a load takes it again.
  std::vector<LoraAdapter> lora_adapters_;
  int64_t lora_max_rank_ = 0;
  ModelMemoryPlan memory_plan_;  // set by load()
};

}  // namespace sgl::model
