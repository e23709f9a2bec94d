// ModelConfig from a GGUF file's metadata (the architectures with a GGUF name in architectures.h).
#pragma once

#include <filesystem>

#include "core/status.h"
#include "model/gguf.h"
#include "model/model_config.h"

namespace sgl::model {

// Builds our config from `<arch>.*` keys (arch = general.architecture), the tokenizer's special
// token ids and the tensor list (tied embeddings when output.weight is absent; vocab size from
// token_embd.weight). torch_dtype is "float32": llama.cpp computes RoPE frequencies in f32, so
// no bf16 rounding of inv_freq (see rope_cache.cpp). Every value is checked against
// ConfigBounds, errors naming the metadata key.
Result<ModelConfig> model_config_from_gguf(const GgufFile& file);

// GgufFile::open + model_config_from_gguf.
Result<ModelConfig> load_gguf_model_config(const std::filesystem::path& path);

}  // namespace sgl::model
