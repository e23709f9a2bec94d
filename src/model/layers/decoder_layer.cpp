// DecoderLayer: loading and the forward pass.
#include "model/layers/decoder_layer.h"

#include "kernels/rms_norm.h"

namespace sgl::model {

Status DecoderLayer::load(WeightLoader& w, const std::string& prefix) {
  SGL_ASSIGN_OR_RETURN(input_norm_, w.load_norm(prefix + "input_layernorm.weight", hidden_size_));
  SGL_RETURN_IF_ERROR(attention_.load(w, prefix + "self_attn."));
  SGL_ASSIGN_OR_RETURN(post_norm_,
                       w.load_norm(prefix + "post_attention_layernorm.weight", hidden_size_));
  if (auto* moe = std::get_if<MoeMlp>(&mlp_)) return moe->load(w, prefix);
  return std::get<DenseMlp>(mlp_).load(w, prefix + "mlp.");
}

void DecoderLayer::forward(const Tensor& hidden, const Tensor& residual, const Tensor& rope_cos_sin,
                           const LayerScratch& scratch, const ForwardBatch& fb,
                           ModelContext& ctx) const {
  kernels::fused_add_rms_norm(hidden, residual, input_norm_, rms_norm_eps_, ctx.stream);
  attention_.forward(hidden, rope_cos_sin, scratch.attention, fb, ctx);
  kernels::fused_add_rms_norm(hidden, residual, post_norm_, rms_norm_eps_, ctx.stream);
  if (const auto* moe = std::get_if<MoeMlp>(&mlp_)) {
    moe->forward(hidden, scratch.moe_mlp, ctx.stream);
  } else {
    std::get<DenseMlp>(mlp_).forward(hidden, scratch.dense_mlp, ctx.stream);
  }
}

}  // namespace sgl::model
