// An embedding model's pooling (SGLang's --is-embedding), as its sentence-transformers files
// configure it: modules.json lists the modules after the transformer (Pooling, Normalize), and
// the Pooling module's config.json (usually 1_Pooling/config.json) says which pooling.
#pragma once

#include <cstdint>
#include <filesystem>

#include "core/status.h"
#include "forward/pooling.h"

namespace sgl::model {

// The pooling of the model at `model_path` (a Hugging Face directory or a .gguf file), whose
// hidden size is `hidden_size`. Without modules.json: last-token pooling, L2-normalised (SGLang's
// default for Qwen3 and Llama embedding models). Last-token and mean pooling are supported;
// another pooling mode (CLS, max, ...), several at once, or a module after the transformer other
// than Pooling and Normalize is Unimplemented, naming it; a malformed file InvalidArgument.
Result<PoolerConfig> read_pooler_config(const std::filesystem::path& model_path,
                                        int64_t hidden_size);

}  // namespace sgl::model
