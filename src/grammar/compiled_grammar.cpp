// A grammar compiled for one tokenizer.
#include "grammar/compiled_grammar.h"

namespace sgl::grammar {

CompiledGrammar::CompiledGrammar(Grammar grammar, GrammarAutomaton automaton,
                                 std::shared_ptr<const TokenizerInfo> tokenizer)
    : grammar_(std::move(grammar)),
      automaton_(std::move(automaton)),
      tokenizer_(std::move(tokenizer)),
      mask_cache_(std::make_unique<TokenMaskCache>(automaton_, *tokenizer_)) {}

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::compile(
    Grammar grammar, std::shared_ptr<const TokenizerInfo> tokenizer,
    const CompileOptions& options) {
  if (tokenizer == nullptr) tokenizer = std::make_shared<const TokenizerInfo>();
  SGL_ASSIGN_OR_RETURN(GrammarAutomaton automaton, build_automaton(grammar));
  auto compiled = std::make_shared<const CompiledGrammar>(std::move(grammar), std::move(automaton),
                                                          std::move(tokenizer));
  if (options.precompute_masks) compiled->mask_cache().precompute_all();
  return std::shared_ptr<const CompiledGrammar>(std::move(compiled));
}

size_t CompiledGrammar::memory_bytes() const {
  return mask_cache_->memory_bytes() +
         static_cast<size_t>(automaton_.num_states()) * (sizeof(ByteEdge) * 2 + 16);
}

}  // namespace sgl::grammar
