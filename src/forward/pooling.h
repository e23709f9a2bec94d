// Pooling: how an embedding model turns a prompt's final hidden states into one vector (SGLang's
// Pooler; sentence-transformers' Pooling and Normalize modules).
#pragma once

#include <cstdint>

namespace sgl {

// What a forward pass returns per request instead of logits (SGLang's PoolingType).
enum class PoolingType : uint8_t {
  kNone,  // a generation batch: logits
  kLast,  // the last token's hidden state (Qwen3-Embedding, e5-mistral)
  kMean,  // the mean of every prompt token's hidden state
};

inline const char* pooling_type_name(PoolingType type) {
  switch (type) {
    case PoolingType::kNone:
      return "none";
    case PoolingType::kLast:
      return "last";
    case PoolingType::kMean:
      return "mean";
  }
  return "?";
}

// An embedding model's pooling, as its sentence-transformers modules configure it. `type` kNone:
// a generation model.
struct PoolerConfig {
  PoolingType type = PoolingType::kNone;
  bool normalize = false;  // L2-normalise the pooled vector (the Normalize module)

  bool is_embedding() const { return type != PoolingType::kNone; }
};

}  // namespace sgl
