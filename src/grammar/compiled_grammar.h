// A grammar compiled for one tokenizer: the automaton plus the per-position token mask cache.
// Immutable after construction apart from the cache's once-only fills, so one CompiledGrammar is
// shared read-only (std::shared_ptr<const CompiledGrammar>) by the compiler's cache and by every
// request's GrammarMatcher: it lives as long as the longest of them.
#pragma once

#include <memory>

#include "core/status.h"
#include "grammar/automaton.h"
#include "grammar/grammar.h"
#include "grammar/token_mask_cache.h"
#include "grammar/tokenizer_info.h"

namespace sgl::grammar {

struct CompileOptions {
  // Compute every position's token mask at compile time; otherwise on first use by a matcher.
  bool precompute_masks = false;
};

class CompiledGrammar {
 public:
  // Builds the automaton (the grammar's semantic checks run here) and the mask cache.
  static Result<std::shared_ptr<const CompiledGrammar>> compile(
      Grammar grammar, std::shared_ptr<const TokenizerInfo> tokenizer,
      const CompileOptions& options = {});

  const Grammar& grammar() const { return grammar_; }
  const GrammarAutomaton& automaton() const { return automaton_; }
  const TokenizerInfo& tokenizer() const { return *tokenizer_; }
  const TokenMaskCache& mask_cache() const { return *mask_cache_; }
  size_t memory_bytes() const;

  CompiledGrammar(Grammar grammar, GrammarAutomaton automaton,
                  std::shared_ptr<const TokenizerInfo> tokenizer);
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

 private:
  Grammar grammar_;
  GrammarAutomaton automaton_;
  std::shared_ptr<const TokenizerInfo> tokenizer_;
  std::unique_ptr<TokenMaskCache> mask_cache_;  // refers to automaton_ and *tokenizer_
};

}  // namespace sgl::grammar
