// Tokenizer from a GGUF file's tokenizer.* metadata, via an equivalent tokenizer.json document.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "model/gguf.h"
#include "tokenizer/tokenizer.h"

namespace sgl::tokenizer {

// The tokenizer.json document (as JSON text) that describes the same tokenizer as `metadata`'s
// tokenizer.ggml.* keys: a BPE model over tokenizer.ggml.tokens (ids = positions) with
// tokenizer.ggml.merges ("gpt2"), or merges rebuilt from tokenizer.ggml.scores the way HF's
// LlamaConverter does ("llama", sentencepiece); control/user-defined tokens become added tokens;
// the pre-tokenizer follows tokenizer.ggml.pre. `source` names the file in error messages.
// Unsupported models or pre-tokenizers are Unimplemented errors naming the value.
Result<std::string> gguf_tokenizer_json(const model::GgufMetadata& metadata,
                                        const std::string& source);

// Builds the Tokenizer of a GGUF file: gguf_tokenizer_json() plus bos/eos/unk/pad token strings,
// add_bos_token/add_eos_token and tokenizer.chat_template.
Result<std::unique_ptr<Tokenizer>> tokenizer_from_gguf(const model::GgufFile& file);

}  // namespace sgl::tokenizer
