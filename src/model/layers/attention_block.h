// AttentionBlock: a decoder layer's self-attention: qkv projection (+ bias), per-head q/k RMSNorm,
// RoPE + attention over the KV cache, o projection (+ bias).
#pragma once

#include <cstdint>
#include <string>

#include "core/buffer.h"
#include "core/status.h"
#include "core/tensor.h"
#include "forward/forward_batch.h"
#include "kernels/norm_linear.h"
#include "model/layers/activation_plan.h"
#include "model/layers/linear.h"
#include "model/layers/lora_batch.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/weight_loader.h"

namespace sgl::model {

// The sizes and options of one attention block, at one tensor-parallel rank (SGLang's names: the
// rank's num_heads of total_num_heads; its num_kv_heads of total_num_kv_heads, shared with
// other ranks when there are fewer KV heads than ranks).
struct AttentionShape {
  int64_t hidden_size = 0;
  // Width of the qkv projection's input when it is not hidden_size (EAGLE-3's draft layer
  // attends over [norm(embedding), norm(hidden)], 2 * hidden_size); 0: hidden_size.
  int64_t input_size = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t total_num_heads = 0;
  int64_t total_num_kv_heads = 0;
  int64_t head_dim = 0;
  bool qkv_bias = false;  // q/k/v projections carry a bias
  bool o_bias = false;    // the o projection carries one (added once: by rank 0 at tp > 1)
  bool qk_norm = false;   // per-head RMSNorm on q and k
  double rms_norm_eps = 1e-6;
  TensorParallel tp;

  int64_t q_size() const { return num_heads * head_dim; }
  int64_t qkv_input_size() const { return input_size > 0 ? input_size : hidden_size; }
  int64_t kv_size() const { return num_kv_heads * head_dim; }
};

// The config's attention at rank tp.rank of tp.size (every head at one rank). The config must
// pass check_tensor_parallel.
AttentionShape attention_shape(const ModelConfig& config, TensorParallel tp = {});

class AttentionBlock {
 public:
  // Activations every layer's block shares, for up to max_num_tokens rows.
  struct Scratch {
    Buffer qkv;       // [N, q_size + 2 * kv_size]
    Buffer attn_out;  // [N, q_size]
  };
  static void plan_scratch(const AttentionShape& shape, int64_t max_num_tokens, DType dtype,
                           Scratch& scratch, ActivationPlan& plan);

  // `layer_id`: the layer's index in the KV pool.
  AttentionBlock(const AttentionShape& shape, int layer_id) : shape_(shape), layer_id_(layer_id) {}

  // Loads `<prefix>{q,k,v,o}_proj.*` and `<prefix>{q,k}_norm.weight` (prefix e.g.
  // "model.layers.3.self_attn."); in the loader's check-only mode, checks them.
  Status load(WeightLoader& weights, const std::string& prefix);

  // hidden: [n, H], the normed input; overwritten with the o projection's output (all-reduced
  // over ctx.communicator at tp > 1, in `partial_sums` when given: Linear::forward; with
  // reduce_results false the rank's partial sum, left for the caller to reduce, and true
  // returned). Stores the rank's KV heads of the batch's K/V through ctx.attention.
  // rope_cos_sin: f32 [max_positions, head_dim].
  bool forward(const Tensor& hidden, const Tensor& rope_cos_sin, const Scratch& scratch,
               const ForwardBatch& fb, ModelContext& ctx, const Tensor& partial_sums = Tensor(),
               bool reduce_results = true) const {
    return forward(hidden, hidden, rope_cos_sin, scratch, fb, ctx, partial_sums, reduce_results);
  }
  // input: [n, qkv_input_size()]; output: [n, H] (may be input when they have one shape).
  // input_norm: the norm before the block, folded into the qkv projection (which then reads
  // rms_norm(input_norm->residual_in + input): kernels/norm_linear.h), where folds_input_norm
  // says it can be. lora: the requests' adapters' updates after each projection (no norm
  // folded: the update reads the normed input).
  bool forward(const Tensor& input, const Tensor& output, const Tensor& rope_cos_sin,
               const Scratch& scratch, const ForwardBatch& fb, ModelContext& ctx,
               const Tensor& partial_sums = Tensor(), bool reduce_results = true,
               const kernels::ResidualRmsNorm* input_norm = nullptr,
               const LoraBatch* lora = nullptr) const;

  int layer_id() const { return layer_id_; }  // the decoder layer's index (its KV cache's)

  // Whether forward can fold `norm` of `input` into its qkv projection.
  bool folds_input_norm(const Tensor& input, const kernels::ResidualRmsNorm& norm) const;

 private:
  AttentionShape shape_;
  int layer_id_;
  Linear qkv_proj_;  // [q_size + 2 * kv_size, qkv_input_size] (+ bias): the rank's heads
  Buffer q_norm_;    // [head_dim] (qk_norm only)
  Buffer k_norm_;    // [head_dim] (qk_norm only)
  Linear o_proj_;    // [H, q_size] (+ bias): the rank's heads' columns
};

}  // namespace sgl::model
