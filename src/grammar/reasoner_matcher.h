// The grammar of a request that reasons before it answers (SGLang's ReasonerGrammarObject): the
// model's reasoning is free, and the grammar holds the answer, from the token after the
// reasoning's closing tokens. Without a gate it is the plain GrammarMatcher from the first token.
// A gate may also carry a thinking budget (SGLang's max_thinking_tokens): once the reasoning has
// taken that many tokens, its closing tokens are forced and the answer follows. A budget needs
// no grammar; without one the answer is free.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
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
  // The thinking budget: past this many reasoning tokens (the opening token not counted) the
  // output is forced through budget_end_ids, which end with end_ids. -1: no budget.
  int32_t max_tokens = -1;
  std::vector<int32_t> budget_end_ids;  // SGLang forces a newline, then the closing tag

  bool empty() const { return end_ids.empty(); }
  bool has_budget() const { return max_tokens >= 0; }
};

class ReasonerGrammarMatcher {
 public:
  // grammar null: no grammar (the gate must have a budget); the answer is then free, and
  // vocab_size sizes the masks that force the closing tokens.
  ReasonerGrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, ReasoningGate gate,
                         int64_t vocab_size = 0);

  // Whether the next token is masked: not while the model reasons within its budget, nor where
  // no grammar holds.
  bool constrains_next() const;
  // The allowed next tokens (when constrains_next()): the grammar's, and the reasoning's opening
  // token where the output may still open it; once the budget is spent, the next closing token
  // alone. Layout as GrammarMatcher's.
  void fill_next_token_bitmask(uint32_t* bitmask);
  // Advances by one sampled token; false (and no change) when the grammar holds and does not
  // allow it, or the budget forces another token.
  bool accept_token(int32_t token_id);
  // How many next tokens no mask can hold, whatever they are: 0 with a grammar (it may hold
  // from any token after the reasoning), the tokens left in the budget while the reasoning runs
  // without one, unbounded once its answer is free. Speculative drafts stay within it.
  int32_t free_tokens() const;
  // The grammar accepted a stop token: nothing more is.
  bool is_terminated() const { return matcher_ && matcher_->is_terminated(); }
  // Whether the grammar alone decides the next tokens (its answer: no reasoning before it, or
  // the reasoning ended), so speculative drafts can be checked token by token and undone.
  bool checks_drafts() const { return matcher_.has_value() && phase_ == Phase::kAnswer; }
  // Undoes the last n accept_token calls, all made while checks_drafts() held.
  void rollback(int32_t n);
  int32_t bitmask_words() const { return bitmask_words_; }

 private:
  // kClosing: the budget is spent; budget_end_ids[forced_] is the next token.
  enum class Phase : uint8_t { kMayOpen, kReasoning, kClosing, kAnswer };

  std::optional<GrammarMatcher> matcher_;
  ReasoningGate gate_;
  int32_t bitmask_words_;
  Phase phase_;
  std::vector<int32_t> recent_;  // the reasoning's last end_ids.size() tokens at most
  int32_t reasoning_tokens_ = 0;
  size_t forced_ = 0;
};

}  // namespace sgl::grammar
