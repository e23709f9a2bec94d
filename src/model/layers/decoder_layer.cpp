// DecoderLayer: loading and the forward pass.
#include "model/layers/decoder_layer.h"

#include <algorithm>
#include <type_traits>

#include "kernels/copy.h"
#include "model/layers/residual_norm.h"

namespace sgl::model {

void DecoderLayer::plan_scratch(std::span<const DecoderLayer> layers,
                                const AttentionShape& attention, int64_t max_num_tokens,
                                DType dtype, Device device, bool fp32_all_reduce,
                                LayerScratch& scratch, ActivationPlan& plan) {
  const int64_t n = max_num_tokens;
  AttentionBlock::plan_scratch(attention, n, dtype, scratch.attention, plan);
  int64_t dense_width = 0;
  const MoeShape* sparse = nullptr;
  for (const DecoderLayer& layer : layers) {
    if (const auto* moe = std::get_if<MoeMlp>(&layer.mlp_)) {
      SGL_CHECK(sparse == nullptr || *sparse == moe->shape())
          << "sparse layers of different shapes would share one scratch";
      sparse = &moe->shape();
    } else {
      dense_width = std::max(dense_width, std::get<DenseMlp>(layer.mlp_).intermediate_size());
    }
  }
  if (dense_width > 0) DenseMlp::plan_scratch(dense_width, n, dtype, scratch.dense_mlp, plan);
  if (sparse != nullptr) MoeMlp::plan_scratch(*sparse, n, dtype, device, scratch.moe_mlp, plan);
  if (fp32_all_reduce && attention.tp.size > 1 && dtype != DType::kF32) {
    plan.add(&scratch.partial_sums, DType::kF32, n, attention.hidden_size);
  }
}

Status DecoderLayer::load(WeightLoader& w, const std::string& prefix) {
  SGL_RETURN_IF_ERROR(
      w.store(input_norm_, w.load_norm(prefix + "input_layernorm.weight", hidden_size_)));
  SGL_RETURN_IF_ERROR(attention_.load(w, prefix + "self_attn."));
  SGL_RETURN_IF_ERROR(
      w.store(post_norm_, w.load_norm(prefix + "post_attention_layernorm.weight", hidden_size_)));
  if (auto* moe = std::get_if<MoeMlp>(&mlp_)) return moe->load(w, prefix);
  return std::get<DenseMlp>(mlp_).load(w, prefix + "mlp.");
}

bool DecoderLayer::forward(const Tensor& hidden, bool hidden_partial, ResidualStream& residual,
                           const Tensor& rope_cos_sin, const LayerScratch& scratch,
                           const ForwardBatch& fb, ModelContext& ctx,
                           std::span<const StreamCapture> captures, const LoraBatch* lora) const {
  distributed::Communicator* comm = ctx.communicator;
  const auto input_norm = fold_or_run_norm(attention_, hidden, hidden_partial, residual,
                                           input_norm_, rms_norm_eps_, comm, ctx.stream);
  const Tensor& partial_sums = scratch.partial_sums.tensor();  // undefined unless planned
  // The blocks' all-reduces go into the norms after them (reduce_add_rms_norm), except with
  // f32 partial sums (--enable-fp32-all-reduce), which the blocks reduce and round themselves.
  const bool defer = comm != nullptr && !partial_sums.defined();
  const bool attention_partial =
      attention_.forward(hidden, hidden, rope_cos_sin, scratch.attention, fb, ctx, partial_sums,
                         !defer, input_norm ? &*input_norm : nullptr, lora);
  // After the block: a folded norm's qkv projection writes the stream entering the layer.
  for (const StreamCapture& c : captures) {
    kernels::copy_columns(residual.current, c.dst, c.column, ctx.stream);
  }
  return std::visit(
      [&](const auto& mlp) {
        const auto post_norm = fold_or_run_norm(mlp, hidden, attention_partial, residual,
                                                post_norm_, rms_norm_eps_, comm, ctx.stream);
        const kernels::ResidualRmsNorm* folded = post_norm ? &*post_norm : nullptr;
        if constexpr (std::is_same_v<std::decay_t<decltype(mlp)>, MoeMlp>) {
          return mlp.forward(hidden, scratch.moe_mlp, ctx.stream, comm, !defer, folded);
        } else {
          return mlp.forward(hidden, scratch.dense_mlp, ctx.stream, comm, partial_sums, !defer,
                             folded, lora, attention_.layer_id());
        }
      },
      mlp_);
}

}  // namespace sgl::model
