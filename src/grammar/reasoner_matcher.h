// The grammar of a request that reasons before it answers (SGLang's ReasonerGrammarObject): the
// model's reasoning is free, and the grammar holds the answer, from the token after the
// reasoning's closing tokens. Without a gate it is the plain GrammarMatcher from the first token.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"

namespace sgl::grammar {

// Where a constrained output's reasoning is (engine GenerateRequest::reasoning_gate).
struct ReasoningGate {
  // The reasoning's closing token ids in a row (Qwen3's </think>); empty: no reasoning, the
  // grammar holds from the first token.
  std::vector<int32_t> end_ids;
  // -1: the output starts inside the reasoning (the prompt opened it). Otherwise the output
  // opens its reasoning only with this token first (Qwen3's <think>); any other first token
  // starts the answer, under the grammar.
  int32_t start_id = -1;

  bool empty() const { return end_ids.empty(); }
};

class ReasonerGrammarMatcher {
 public:
  ReasonerGrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, ReasoningGate gate);

  // Whether the next token is masked: not while the model reasons.
  bool constrains_next() const { return phase_ != Phase::kReasoning; }
  // The allowed next tokens (when constrains_next()): the grammar's, and the reasoning's opening
  // token where the output may still open it. Layout as GrammarMatcher's.
  void fill_next_token_bitmask(uint32_t* bitmask);
  // Advances by one sampled token; false (and no change) when the grammar holds and does not
  // allow it.
  bool accept_token(int32_t token_id);
  // The grammar accepted a stop token: nothing more is.
  bool is_terminated() const { return matcher_.is_terminated(); }
  int32_t bitmask_words() const { return matcher_.bitmask_words(); }

 private:
  enum class Phase : uint8_t { kMayOpen, kReasoning, kAnswer };

  GrammarMatcher matcher_;
  ReasoningGate gate_;
  Phase phase_;
  std::vector<int32_t> recent_;  // the reasoning's last end_ids.size() tokens at most
};

}  // namespace sgl::grammar
