// Model: a causal LM's forward pass over a ForwardBatch, and the context it runs in.
#pragma once

#include "attention/attention_backend.h"
#include "backend/stream.h"
#include "core/tensor.h"
#include "forward/forward_batch.h"
#include "model/model_config.h"

namespace sgl::model {

// Everything a forward pass borrows; passed explicitly so two engines can share a process.
struct ModelContext {
  attention::AttentionBackend& attention;
  backend::Stream stream;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  // Runs the batch; returns f32 logits [fb.num_logit_rows(), vocab] in memory the model owns,
  // valid until the next forward. Writes the batch's K/V into the KV pool via the attention
  // backend. fb.num_tokens must not exceed the model's max_num_tokens.
  virtual Tensor forward(const ForwardBatch& fb, ModelContext& ctx) = 0;
};

}  // namespace sgl::model
