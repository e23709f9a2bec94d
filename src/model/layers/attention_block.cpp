// AttentionBlock: loading and the forward pass.
#include "model/layers/attention_block.h"

#include "kernels/rms_norm.h"
#include "kernels/rope.h"

namespace sgl::model {

AttentionShape attention_shape(const ModelConfig& config, TensorParallel tp) {
  return {.hidden_size = config.hidden_size,
          .num_heads = config.num_attention_heads / tp.size,
          .num_kv_heads = kv_heads_per_rank(config.num_key_value_heads, tp.size),
          .total_num_heads = config.num_attention_heads,
          .total_num_kv_heads = config.num_key_value_heads,
          .head_dim = config.head_dim,
          .qkv_bias = config.attention_bias,
          .o_bias = config.o_bias,
          .qk_norm = config.qk_norm,
          .rms_norm_eps = config.rms_norm_eps,
          .tp = tp};
}

void AttentionBlock::plan_scratch(const AttentionShape& shape, int64_t max_num_tokens, DType dtype,
                                  Scratch& scratch, ActivationPlan& plan) {
  plan.add(&scratch.qkv, dtype, max_num_tokens, shape.q_size() + 2 * shape.kv_size());
  plan.add(&scratch.attn_out, dtype, max_num_tokens, shape.q_size());
}

Status AttentionBlock::load(WeightLoader& w, const std::string& prefix) {
  const AttentionShape& s = shape_;
  // The checkpoint's sizes: every head. Ranks split q by heads and k / v by KV heads (sharing
  // one when there are fewer than ranks); o_proj by the matching input columns.
  const int64_t q_rows = s.total_num_heads * s.head_dim,
                kv_rows = s.total_num_kv_heads * s.head_dim;
  const LinearSpec qkv{.modules = {prefix + "q_proj", prefix + "k_proj", prefix + "v_proj"},
                       .out_features = {q_rows, kv_rows, kv_rows},
                       .in_features = s.qkv_input_size(),
                       .bias = s.qkv_bias,
                       .shard = ShardRule::kColumn,
                       .heads = {s.total_num_heads, s.total_num_kv_heads, s.total_num_kv_heads},
                       .tp = s.tp};
  const LinearSpec o{.modules = {prefix + "o_proj"},
                     .out_features = {s.hidden_size},
                     .in_features = q_rows,
                     .bias = s.o_bias,
                     .shard = ShardRule::kRow,
                     .tp = s.tp};
  SGL_RETURN_IF_ERROR(load_linear(w, qkv, qkv_proj_));
  if (s.qk_norm) {
    SGL_RETURN_IF_ERROR(w.store(q_norm_, w.load_norm(prefix + "q_norm.weight", s.head_dim)));
    SGL_RETURN_IF_ERROR(w.store(k_norm_, w.load_norm(prefix + "k_norm.weight", s.head_dim)));
  }
  return load_linear(w, o, o_proj_);
}

bool AttentionBlock::folds_input_norm(const Tensor& input,
                                      const kernels::ResidualRmsNorm& norm) const {
  const Tensor& bias = qkv_proj_.bias.tensor();
  return (!bias.defined() || bias.dtype() == input.dtype()) &&
         kernels::norm_folds_into_linear(input, norm, qkv_proj_.weight,
                                         kernels::FoldedProjection::kLinear);
}

bool AttentionBlock::forward(const Tensor& input, const Tensor& output, const Tensor& rope_cos_sin,
                             const Scratch& scratch, const ForwardBatch& fb, ModelContext& ctx,
                             const Tensor& partial_sums, bool reduce_results,
                             const kernels::ResidualRmsNorm* input_norm,
                             const LoraBatch* lora) const {
  const AttentionShape& s = shape_;
  const int64_t n = input.size(0);
  const Tensor qkv = scratch.qkv.tensor().slice_rows(0, n);
  const Tensor attn_out = scratch.attn_out.tensor().slice_rows(0, n);

  if (input_norm != nullptr) {  // column-parallel: the rank's heads
    kernels::add_rms_norm_linear(input, *input_norm, qkv_proj_.weight, qkv_proj_.bias.tensor(), qkv,
                                 Tensor(), ctx.stream);
  } else {
    qkv_proj_.forward(input, qkv, ctx.stream);
  }
  const bool adapted = lora != nullptr && !lora->empty();
  if (adapted) {
    SGL_CHECK(input_norm == nullptr) << "a LoRA update reads the normed input: no norm folds";
    SGL_CHECK_EQ(qkv_proj_.tp_size, 1);
    lora->apply(layer_id_, LoraModule::kQ, input, qkv.slice_last(0, s.q_size()), ctx.stream);
    lora->apply(layer_id_, LoraModule::kK, input, qkv.slice_last(s.q_size(), s.kv_size()),
                ctx.stream);
    lora->apply(layer_id_, LoraModule::kV, input,
                qkv.slice_last(s.q_size() + s.kv_size(), s.kv_size()), ctx.stream);
  }
  const Tensor q = qkv.slice_last(0, s.q_size()).split_heads(s.num_heads);
  const Tensor k = qkv.slice_last(s.q_size(), s.kv_size()).split_heads(s.num_kv_heads);
  const Tensor v =
      qkv.slice_last(s.q_size() + s.kv_size(), s.kv_size()).split_heads(s.num_kv_heads);
  // The q/k norm (Qwen3), RoPE, the KV store and attention: one pass where the backend folds
  // the norm and RoPE into the store or the decode kernel, else as many as it needs.
  const attention::QkNorm qk_norm{q_norm_, k_norm_, static_cast<float>(s.rms_norm_eps)};
  bool done = ctx.attention.forward_with_rope(layer_id_, q, k, v, fb.positions, rope_cos_sin,
                                              attn_out, fb, s.qk_norm ? &qk_norm : nullptr);
  if (!done && s.qk_norm) {
    kernels::qk_rms_norm(q, k, q_norm_, k_norm_, s.rms_norm_eps, ctx.stream);
    done = ctx.attention.forward_with_rope(layer_id_, q, k, v, fb.positions, rope_cos_sin, attn_out,
                                           fb, nullptr);
  }
  if (!done) {
    kernels::rope(q, k, fb.positions, rope_cos_sin, ctx.stream);
    ctx.attention.forward(layer_id_, q, k, v, attn_out, fb);
  }
  const bool partial =
      o_proj_.forward(attn_out, output, ctx.stream, ctx.communicator, reduce_results, partial_sums);
  if (adapted) lora->apply(layer_id_, LoraModule::kO, attn_out, output, ctx.stream);
  return partial;
}

}  // namespace sgl::model
