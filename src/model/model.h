// Model: a causal LM's forward pass over a ForwardBatch, the context it runs in, its output and
// the sizes it reserves.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/attention_backend.h"
#include "backend/stream.h"
#include "core/tensor.h"
#include "distributed/communicator.h"
#include "forward/forward_batch.h"
#include "model/expert_parallel.h"
#include "model/lora_adapter.h"
#include "model/model_config.h"
#include "model/tensor_parallel.h"
#include "model/weight_source.h"

namespace sgl::model {

// Sizes of the activation memory a model reserves once, at load, and what it is loaded as.
struct ModelOptions {
  int64_t max_num_tokens = 8192;  // tokens in one forward pass
  int64_t max_logit_rows = 256;   // rows of logits (or pooled embeddings) one forward may return
  int64_t max_positions = 0;      // RoPE table length; 0 = config.max_position_embeddings
  // Every forward records each sparse layer's top-k expert ids (ModelOutput::routed_experts);
  // SGLang's --enable-return-routed-experts.
  bool enable_return_routed_experts = false;
  // EAGLE-3's target: the layers whose output hidden states its draft reads (SGLang's
  // eagle_aux_hidden_state_layer_ids, each in [0, num_layers - 2]: captured as the residual
  // stream entering the next layer), returned as ModelOutput::aux_hidden_states.
  std::vector<int64_t> aux_hidden_state_layers;
  // SGLang's --is-embedding: the model pools hidden states (ForwardBatch::pooling) and has no LM
  // head. Its checkpoint may store the bare decoder as transformers' base model does
  // (Qwen3Model: `embed_tokens.weight`, `layers.N.*`, `norm.weight`, no `model.` prefix).
  bool is_embedding = false;
  // The rank this model is of a tensor-parallel group (SGLang's tp_rank / tp_size): it loads and
  // computes only its shard (model/layers/linear.h has the rules) and its forward passes need
  // ModelContext::communicator at size > 1.
  TensorParallel tp;
  // SGLang's --ep-size: the MoE layers' experts split over this many groups of tp's ranks
  // (model/expert_parallel.h); 1 = every rank holds a share of every expert.
  int ep_size = 1;
  // How tokens reach the other ranks' experts at ep_size > 1 (kAuto: by device).
  ExpertDispatch ep_dispatch = ExpertDispatch::kAuto;
  // At tp > 1 in a 16-bit dtype, the dense layers' row-parallel projections (o_proj, down_proj)
  // compute, all-reduce and add their partial sums in f32 and round once, as one rank does
  // (--enable-fp32-all-reduce; Linear::forward). Off: each rank's partial is rounded and the
  // collective adds in the dtype, as SGLang does (twice the collective's bytes when on).
  bool fp32_all_reduce = false;
  // SGLang's --enable-lora (implied by lora_paths): the model serves LoRA adapters, and
  // --lora-paths: those loaded with it (model/lora_adapter.h), ids 1, 2, ... in order; more come
  // and go by Model::load_lora_adapter. A forward pass's requests name theirs in
  // ForwardBatch::lora_ids_host. A dense model at one rank only, so far.
  bool enable_lora = false;
  std::vector<LoraAdapterPath> lora_paths;
  // --max-lora-rank: adapters of a larger rank are refused; 0: the largest of lora_paths' (then
  // required beside enable_lora without lora_paths).
  int64_t max_lora_rank = 0;
  // --lora-target-modules: an adapter targeting another module is refused.
  LoraModules lora_target_modules = kAllLoraModules;
};

// Device memory a model takes once loaded (activations and RoPE table sized by ModelOptions).
struct ModelMemoryPlan {
  int64_t weights = 0;
  int64_t rope_table = 0;
  int64_t activations = 0;
  int64_t total() const { return weights + rope_table + activations; }
};

// Everything a forward pass borrows; passed explicitly so two engines can share a process.
struct ModelContext {
  attention::AttentionBackend& attention;
  backend::Stream stream;
  // The tensor-parallel group's collectives (this rank's); null at one rank.
  distributed::Communicator* communicator = nullptr;
};

// What one forward pass returns, in memory the model owns, valid until its next forward.
struct ModelOutput {
  Tensor logits;  // f32 [fb.num_logit_rows(), vocab]; undefined for a pooling batch
  // The final norm's output (the LM head's input) in the activation dtype
  // [fb.num_hidden_rows(), hidden]: the logits rows' (CaptureHiddenMode::kLast) or every
  // token's (kFull); undefined without capture. EAGLE drafts read it.
  Tensor hidden_states;
  // The residual stream at each ModelOptions::aux_hidden_state_layers layer's output, side by
  // side in that order, in the activation dtype [fb.num_hidden_rows(), layers * hidden]; only
  // with capture and such layers, undefined otherwise. EAGLE-3 drafts read it.
  Tensor aux_hidden_states;
  // i32 [num_sparse_layers * fb.num_tokens, top_k], layer-major, on the model's device: the
  // experts each token was routed to in each sparse layer, in the router's order; only with
  // ModelOptions::enable_return_routed_experts, undefined otherwise.
  Tensor routed_experts;
  // A pooling batch's (fb.pooling): f32 [fb.batch_size, hidden], each request's final-norm
  // output pooled over this pass as fb.pooling says; undefined otherwise.
  Tensor embeddings;
};

struct Linear;
class WeightLoader;

// One checkpoint tensor as this rank holds it (Model::find_weight).
struct WeightView {
  Tensor values;               // the rank's share, in the model's memory and dtype
  std::vector<int64_t> shape;  // the whole tensor's shape in the checkpoint
  TensorSlice slice;           // which share of it `values` is (whole at one rank)
};

// A causal LM's token embedding and LM head as EAGLE draft heads share them (SGLang's
// get_embed_and_head): the model's own, valid while it lives. At tp > 1 each holds the rank's
// vocabulary rows (vocab-parallel, model/layers/linear.h: embed_tokens / lm_head_logits).
struct EmbedAndHead {
  const Linear* embed_tokens = nullptr;  // [V, H] (the rank's rows)
  const Linear* lm_head = nullptr;       // [V, H]; the embedding itself when the two are tied
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  // What loading allocated (weights, RoPE table, activation scratch), for the start-up log.
  virtual ModelMemoryPlan memory_plan() const = 0;
  // Runs the batch. Writes the batch's K/V into the KV pool via the attention backend.
  // fb.num_tokens must not exceed the model's max_num_tokens. A pooling batch (fb.pooling) needs
  // an embedding model (ModelOptions::is_embedding), which runs nothing else.
  virtual ModelOutput forward(const ForwardBatch& fb, ModelContext& ctx) = 0;
  // The weights a draft head shares; undefined tensors for a model without an LM head.
  virtual EmbedAndHead embed_and_head() const { return {}; }
  // Overwrites every weight in place with `weights`' (a checkpoint of the same network; no
  // forward may run meanwhile): checked whole first, as a load is, so a checkpoint that lacks a
  // tensor or has one of another shape changes nothing. `overwritten` turns true once a weight
  // has been written: a read failing after that leaves the weights mixed (the caller loads the
  // previous checkpoint back).
  virtual Status update_weights(WeightLoader& weights, bool& overwritten) = 0;
  // The weight the checkpoint calls `name` as this rank holds it (SGLang's get_weights_by_name;
  // a tied LM head answers with the embedding); NotFound for one it does not hold. No forward
  // may run meanwhile.
  virtual Result<WeightView> find_weight(const std::string& name) = 0;
  // SGLang's /load_lora_adapter: `adapter` becomes id `id` (>= 1, a free one), in `allocator`'s
  // memory, checked as the adapters loaded at start are. No forward may run meanwhile.
  virtual Status load_lora_adapter(int32_t /*id*/, const LoraAdapterPath& /*adapter*/,
                                   Allocator& /*allocator*/) {
    return unimplemented("LoRA adapters on this model");
  }
  // Frees adapter `id`'s memory; no request may use it any more. No forward may run meanwhile.
  virtual void unload_lora_adapter(int32_t /*id*/) {}
};

}  // namespace sgl::model
