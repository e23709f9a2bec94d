// DecoderLayer: one pre-norm transformer layer: input RMSNorm + attention block, post-attention
// RMSNorm + an MLP block, each added to the residual stream.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <variant>

#include "core/buffer.h"
#include "core/device.h"
#include "core/status.h"
#include "core/tensor.h"
#include "forward/forward_batch.h"
#include "model/layers/activation_plan.h"
#include "model/layers/attention_block.h"
#include "model/layers/dense_mlp.h"
#include "model/layers/moe_mlp.h"
#include "model/layers/residual_norm.h"
#include "model/model.h"
#include "model/weight_loader.h"

namespace sgl::model {

// The MLP a layer runs, chosen per layer by the architecture.
using Mlp = std::variant<DenseMlp, MoeMlp>;

// Where a layer copies the residual stream entering it (EAGLE-3's captured hidden states):
// columns [column, column + H) of dst, f32 [n, W].
struct StreamCapture {
  Tensor dst;
  int64_t column = 0;
};

// The activation scratch the layers share (each block kind's, declared once).
struct LayerScratch {
  AttentionBlock::Scratch attention;
  DenseMlp::Scratch dense_mlp;  // allocated only when some layer is dense
  MoeMlp::Scratch moe_mlp;      // allocated only when some layer is sparse
  // f32 [N, H]: the row-parallel projections' partial sums, all-reduced in f32 (Linear::forward);
  // allocated only with fp32_all_reduce at tp > 1 in a 16-bit dtype (ModelOptions).
  Buffer partial_sums;
};

class DecoderLayer {
 public:
  // Declares `layers`' shared scratch for up to max_num_tokens rows: the attention block's, and
  // each MLP kind's only when some layer runs it (sized for the widest such layer; the sparse
  // layers must share one MoeShape), and with `fp32_all_reduce` the f32 partial sums. `device`
  // sizes the MoE workspace.
  static void plan_scratch(std::span<const DecoderLayer> layers, const AttentionShape& attention,
                           int64_t max_num_tokens, DType dtype, Device device, bool fp32_all_reduce,
                           LayerScratch& scratch, ActivationPlan& plan);

  DecoderLayer(int64_t hidden_size, double rms_norm_eps, AttentionBlock attention, Mlp mlp)
      : hidden_size_(hidden_size),
        rms_norm_eps_(rms_norm_eps),
        attention_(std::move(attention)),
        mlp_(std::move(mlp)) {}

  // Loads `<prefix>input_layernorm.weight`, `<prefix>self_attn.*`,
  // `<prefix>post_attention_layernorm.weight` and the MLP's tensors (`<prefix>mlp.*`; a sparse
  // block's where its MoeWeightNames say) (prefix e.g. "model.layers.3."), in that order; in the
  // loader's check-only mode, checks them.
  Status load(WeightLoader& weights, const std::string& prefix);

  // hidden: [n, H], the previous layer's output (the embeddings before the first layer), and
  // residual.current: f32 [n, H], the residual stream without it (zeros before the first
  // layer). Both are updated: hidden in place becomes this layer's MLP output; the stream in
  // place, or (each norm a block folds) into residual.spare, the two then swapped. Each of
  // `captures` receives the stream entering the layer (the previous layer's output added in).
  // hidden_partial: hidden holds the rank's partial sum of the previous layer's output (this
  // layer's input norm all-reduces it first, in one kernel where the communicator can). Returns
  // whether this layer's output is left so (at tp > 1 the MLP's all-reduce goes into the next
  // norm: reduce_add_rms_norm).
  bool forward(const Tensor& hidden, bool hidden_partial, ResidualStream& residual,
               const Tensor& rope_cos_sin, const LayerScratch& scratch, const ForwardBatch& fb,
               ModelContext& ctx, std::span<const StreamCapture> captures = {},
               const LoraBatch* lora = nullptr) const;

  // The sparse block, or null for a dense layer.
  const MoeMlp* moe_mlp() const { return std::get_if<MoeMlp>(&mlp_); }

 private:
  int64_t hidden_size_;
  double rms_norm_eps_;
  Buffer input_norm_;  // [H]
  AttentionBlock attention_;
  Buffer post_norm_;  // [H]
  Mlp mlp_;
};

}  // namespace sgl::model
