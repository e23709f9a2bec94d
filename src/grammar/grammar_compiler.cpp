// Compiles grammar sources for one tokenizer, with a bounded LRU cache.
#include "grammar/grammar_compiler.h"

#include "grammar/ebnf_parser.h"
#include "grammar/regex_compiler.h"

namespace sgl::grammar {

const char* grammar_kind_name(GrammarKind kind) {
  switch (kind) {
    case GrammarKind::kEbnf:
      return "ebnf";
    case GrammarKind::kRegex:
      return "regex";
    case GrammarKind::kJsonSchema:
      return "json_schema";
    case GrammarKind::kJsonObject:
      return "json_object";
  }
  return "unknown";
}

GrammarCompiler::GrammarCompiler(std::shared_ptr<const TokenizerInfo> tokenizer,
                                 GrammarCompilerOptions options)
    : tokenizer_(std::move(tokenizer)), options_(std::move(options)) {}

Result<Grammar> GrammarCompiler::to_grammar(GrammarKind kind, std::string_view source) const {
  switch (kind) {
    case GrammarKind::kEbnf:
      return parse_ebnf(source);
    case GrammarKind::kRegex:
      return regex_to_grammar(source);
    case GrammarKind::kJsonSchema:
      return json_schema_to_grammar(source, options_.json);
    case GrammarKind::kJsonObject:
      return any_json_object_grammar(options_.json);
  }
  return invalid_argument("unknown grammar kind");
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::compile(GrammarKind kind,
                                                                        std::string_view source) {
  std::string key(1, static_cast<char>(kind));
  if (kind != GrammarKind::kJsonObject) key.append(source);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++hits_;
      return it->second->second;
    }
  }
  // Compiled outside the lock: other requests keep being served meanwhile. Two racing compiles
  // of the same source both succeed; the second insert keeps the first's entry.
  SGL_ASSIGN_OR_RETURN(Grammar grammar, to_grammar(kind, source));
  SGL_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> compiled,
                       CompiledGrammar::compile(std::move(grammar), tokenizer_, options_.compile));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second->second;
  if (options_.cache_capacity == 0) return compiled;
  lru_.emplace_front(key, compiled);
  index_[key] = lru_.begin();
  while (lru_.size() > options_.cache_capacity) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return compiled;
}

size_t GrammarCompiler::cache_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

uint64_t GrammarCompiler::cache_hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

void GrammarCompiler::clear_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  lru_.clear();
  index_.clear();
}

}  // namespace sgl::grammar
