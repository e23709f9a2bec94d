// Compiles EBNF / regex / JSON Schema sources for one tokenizer and caches the results by
// (kind, source text) in a bounded LRU. Thread-safe: HTTP workers compile concurrently; a
// CompiledGrammar is shared read-only by the cache and every matcher using it.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/status.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_kind.h"
#include "grammar/json_schema_compiler.h"

namespace sgl::grammar {

struct GrammarCompilerOptions {
  size_t cache_capacity = 256;  // compiled grammars kept (least recently used evicted)
  JsonSchemaOptions json;
  CompileOptions compile;
};

class GrammarCompiler {
 public:
  explicit GrammarCompiler(std::shared_ptr<const TokenizerInfo> tokenizer,
                           GrammarCompilerOptions options = {});

  // The compiled grammar, from the cache or compiled now. Errors (invalid source, unsupported
  // construct, left recursion, empty language) are InvalidArgument / ResourceExhausted with the
  // reason, meant for a 400 reply.
  Result<std::shared_ptr<const CompiledGrammar>> compile(GrammarKind kind, std::string_view source);

  size_t cache_size() const;
  uint64_t cache_hits() const;
  void clear_cache();
  const TokenizerInfo& tokenizer() const { return *tokenizer_; }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const CompiledGrammar>>;

  Result<Grammar> to_grammar(GrammarKind kind, std::string_view source) const;

  std::shared_ptr<const TokenizerInfo> tokenizer_;
  GrammarCompilerOptions options_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  uint64_t hits_ = 0;
};

}  // namespace sgl::grammar
