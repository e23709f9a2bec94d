// GrammarBackend: compiles requests' structured-output constraints for the served model
// (SGLang's grammar backend). The tokenizer's vocabulary as byte strings (the grammar engine's
// TokenizerInfo) is built on first use, so a server that never sees a constrained request does
// not pay for it at start. Thread-safe: HTTP workers compile concurrently; compiled grammars are
// cached by their source text (grammar::GrammarCompiler).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/status.h"
#include "grammar/grammar_compiler.h"
#include "server/openai_types.h"
#include "tokenizer/tokenizer.h"

namespace sgl::server {

// The grammar engine's view of `tokenizer`: each id's bytes (Tokenizer::token_bytes), bitmasks
// `vocab_size` wide (the model's logits; ids past the tokenizer's never allowed), `stop_ids`
// allowed where a grammar may end, the tokenizer's special tokens never.
Result<grammar::TokenizerInfo> grammar_tokenizer_info(const tokenizer::Tokenizer& tokenizer,
                                                      int64_t vocab_size,
                                                      const std::vector<int32_t>& stop_ids);

class GrammarBackend {
 public:
  // Borrows `tokenizer`. `stop_ids`: the model's EOS ids. `json`: how JSON Schema and JSON
  // object constraints shape their JSON (whitespace). `refusal` nonempty: every constraint is
  // refused, the error naming the field and then saying this (SGLang's --grammar-backend none;
  // a server without a tokenizer).
  GrammarBackend(const tokenizer::Tokenizer& tokenizer, int64_t vocab_size,
                 std::vector<int32_t> stop_ids, grammar::JsonSchemaOptions json = {},
                 std::string refusal = {});
  ~GrammarBackend();

  // The compiled grammar; an invalid or unsupported grammar, or any with the backend disabled,
  // is kInvalidArgument naming the request field (a 400).
  // Const: the lazily built vocabulary and the compiler's cache are internal, synchronized state.
  Result<std::shared_ptr<const grammar::CompiledGrammar>> compile(const GrammarInput& input) const;

 private:
  Status init() const;

  const tokenizer::Tokenizer& tokenizer_;
  int64_t vocab_size_;
  std::vector<int32_t> stop_ids_;
  grammar::JsonSchemaOptions json_;
  std::string refusal_;
  mutable std::once_flag init_once_;
  mutable Status init_status_;
  mutable std::unique_ptr<grammar::GrammarCompiler> compiler_;  // set by init()
};

}  // namespace sgl::server
