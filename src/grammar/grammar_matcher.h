// The per-request matcher: the grammar's state after the tokens accepted so far, the next-token
// bitmask, rollback. Owned by one request (not thread-safe); the CompiledGrammar it reads is
// shared.
//
// Typical decode step (the sampler masks logits where a bit is 0):
//   matcher.fill_next_token_bitmask(mask);   // bit id of word id/32: token id allowed
//   ... sample id ...
//   matcher.accept_token(id);                // false: id was not allowed (state unchanged)
// Stop tokens (TokenizerInfo::stop_ids) are allowed exactly when can_terminate(); accepting one
// terminates the matcher.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/stack_engine.h"

namespace sgl::grammar {

struct MatcherOptions {
  // Past these counts of stack sets / frames the engine drops what the history no longer
  // reaches (made by earlier mask walks): bounds a long generation's memory.
  int32_t compact_sets = 1 << 16;
  int32_t compact_frames = 1 << 18;
};

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                          MatcherOptions options = {});

  // Advances by one token; false (and no change) when the grammar does not allow it here.
  bool accept_token(int32_t token_id);
  // Advances by raw bytes as one step (rollback counts it as one token); false: not allowed.
  bool accept_bytes(std::string_view bytes);
  // Undoes the last n accepted steps (n <= num_steps()).
  void rollback(int32_t n);
  int32_t num_steps() const { return static_cast<int32_t>(history_.size()) - 1; }

  // The input may end here: stop tokens are allowed.
  bool can_terminate() const;
  // A stop token was accepted: nothing more is.
  bool is_terminated() const { return history_.back().terminated; }

  // Writes the allowed next tokens into `bitmask` (bitmask_words() words, bit i%32 of word
  // i/32 for token i). Terminated: only the stop tokens.
  void fill_next_token_bitmask(uint32_t* bitmask);
  int32_t bitmask_words() const { return grammar_->tokenizer().bitmask_words(); }

  // Back to the start.
  void reset();
  const CompiledGrammar& grammar() const { return *grammar_; }

 private:
  struct Step {
    SetId set = StackEngine::kDeadSet;
    bool terminated = false;
  };
  struct MaskMemo {
    SetId set = -1;
    std::vector<uint32_t> bits;
  };

  SetId advance(SetId set, std::string_view bytes);
  void compute_mask(SetId set, uint32_t* bitmask);
  void check_uncertain(SetId start, const std::vector<TokenTrie::NodeId>& nodes, uint32_t* bitmask);
  void maybe_compact();

  std::shared_ptr<const CompiledGrammar> grammar_;
  MatcherOptions options_;
  StackEngine engine_;
  std::vector<Step> history_;  // history_[0]: the start
  // The masks of the last few sets: inside a long string or number the set repeats.
  std::array<MaskMemo, 4> memo_;
  size_t memo_next_ = 0;
  // check_uncertain scratch.
  std::vector<TokenTrie::NodeId> path_nodes_;
  std::vector<SetId> path_sets_;
  std::vector<TokenTrie::NodeId> chain_;
};

}  // namespace sgl::grammar
