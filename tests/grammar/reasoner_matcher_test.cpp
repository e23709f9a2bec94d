// The reasoning gate in front of a grammar (ReasonerGrammarMatcher), over a small vocabulary:
// no gate is the plain matcher; inside the reasoning every token passes and nothing is masked
// until the closing ids come in a row (overlapping repeats included); a first token may open the
// reasoning where the output may; any other first token answers under the grammar, and one the
// grammar refuses changes nothing. A thinking budget forces the closing tokens once the
// reasoning has taken that many, with a grammar after it or none.
#include "grammar/reasoner_matcher.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "grammar/grammar_compiler.h"

namespace sgl::grammar {
namespace {

enum Token : int32_t { kEos, kX, kY, kOpen, kCloseA, kCloseB, kWord };

std::shared_ptr<const CompiledGrammar> x_then_y() {
  auto info =
      TokenizerInfo::create({"</s>", "x", "y", "<think>", "</", "think>", "word"}, 40, {kEos}, {});
  if (!info.ok()) throw std::runtime_error(info.status().to_string());
  GrammarCompiler compiler(std::make_shared<const TokenizerInfo>(std::move(info).value()));
  auto compiled = compiler.compile(GrammarKind::kRegex, "x+y");
  if (!compiled.ok()) throw std::runtime_error(compiled.status().to_string());
  return *compiled;
}

std::vector<int32_t> allowed(ReasonerGrammarMatcher& m) {
  std::vector<uint32_t> mask(m.bitmask_words(), 0);
  m.fill_next_token_bitmask(mask.data());
  std::vector<int32_t> out;
  for (int32_t id = 0; id < 40; ++id) {
    if ((mask[id >> 5] >> (id & 31)) & 1) out.push_back(id);
  }
  return out;
}

TEST(ReasonerGrammarMatcher, WithoutAGateIsThePlainMatcher) {
  ReasonerGrammarMatcher m(x_then_y(), {});
  EXPECT_TRUE(m.constrains_next());
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{kX}));
  EXPECT_FALSE(m.accept_token(kWord));
  EXPECT_TRUE(m.accept_token(kX));
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{kX, kY}));
  EXPECT_TRUE(m.accept_token(kY));
  EXPECT_TRUE(m.accept_token(kEos));
  EXPECT_TRUE(m.is_terminated());
}

TEST(ReasonerGrammarMatcher, InsideTheReasoningWaitsForTheClosingIdsInARow) {
  ReasonerGrammarMatcher m(x_then_y(), {.end_ids = {kCloseA, kCloseA, kCloseB}, .start_id = -1});
  // Free text, a partial close, a broken close, then an overlapping repeat that closes.
  for (int32_t t : {kWord, kY, kCloseA, kWord, kCloseA, kCloseA, kCloseA}) {
    EXPECT_FALSE(m.constrains_next());
    EXPECT_TRUE(m.accept_token(t)) << t;
  }
  EXPECT_FALSE(m.constrains_next());
  EXPECT_TRUE(m.accept_token(kCloseB));
  // The answer: the grammar from its start.
  EXPECT_TRUE(m.constrains_next());
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{kX}));
  EXPECT_FALSE(m.accept_token(kCloseB));
  EXPECT_TRUE(m.accept_token(kX));
  EXPECT_TRUE(m.accept_token(kY));
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.accept_token(kEos));
  EXPECT_TRUE(m.is_terminated());
}

TEST(ReasonerGrammarMatcher, TheOpeningTokenFirstStartsTheReasoning) {
  const ReasoningGate gate = {.end_ids = {kCloseA, kCloseB}, .start_id = kOpen};
  ReasonerGrammarMatcher m(x_then_y(), gate);
  EXPECT_TRUE(m.constrains_next());
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{kX, kOpen}));
  EXPECT_FALSE(m.accept_token(kWord));  // refused: nothing changed
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{kX, kOpen}));
  EXPECT_TRUE(m.accept_token(kOpen));
  for (int32_t t : {kOpen, kWord, kEos, kCloseA}) {
    EXPECT_FALSE(m.constrains_next());
    EXPECT_TRUE(m.accept_token(t));
  }
  EXPECT_TRUE(m.accept_token(kCloseB));
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{kX}));

  // Any other first token is the answer's: the opening is not allowed after it.
  ReasonerGrammarMatcher answer(x_then_y(), gate);
  EXPECT_TRUE(answer.accept_token(kX));
  EXPECT_EQ(allowed(answer), (std::vector<int32_t>{kX, kY}));
  EXPECT_FALSE(answer.accept_token(kOpen));
}

ReasoningGate budget_gate(int32_t max_tokens, int32_t start_id) {
  return {.end_ids = {kCloseA, kCloseB},
          .start_id = start_id,
          .max_tokens = max_tokens,
          .budget_end_ids = {kWord, kCloseA, kCloseB}};
}

TEST(ReasonerGrammarMatcher, ABudgetWithoutAGrammarForcesTheCloseThenFreesTheAnswer) {
  ReasonerGrammarMatcher m(nullptr, budget_gate(3, -1), 40);
  EXPECT_EQ(m.bitmask_words(), 2);
  for (int32_t t : {kX, kCloseA, kY}) {  // a partial close counts as reasoning
    EXPECT_FALSE(m.constrains_next());
    EXPECT_TRUE(m.accept_token(t));
  }
  // Spent: the closing tokens one by one, nothing else.
  for (int32_t t : {kWord, kCloseA, kCloseB}) {
    EXPECT_TRUE(m.constrains_next());
    EXPECT_EQ(allowed(m), (std::vector<int32_t>{t}));
    EXPECT_FALSE(m.accept_token(kEos));
    EXPECT_TRUE(m.accept_token(t));
  }
  for (int32_t t : {kX, kOpen, kEos}) {
    EXPECT_FALSE(m.constrains_next());
    EXPECT_TRUE(m.accept_token(t));
  }
  EXPECT_FALSE(m.is_terminated());
}

// free_tokens: what speculative drafts may cover. A grammar: none; a budget alone: what is left
// of it (with the opening token where the output may still open it); forcing: none; answered:
// unbounded.
TEST(ReasonerGrammarMatcher, FreeTokensAreWhatNoMaskCanHold) {
  EXPECT_EQ(ReasonerGrammarMatcher(x_then_y(), {}).free_tokens(), 0);
  EXPECT_EQ(ReasonerGrammarMatcher(x_then_y(), budget_gate(4, -1)).free_tokens(), 0);
  ReasonerGrammarMatcher opening(nullptr, budget_gate(3, kOpen), 40);
  EXPECT_EQ(opening.free_tokens(), 4);
  ReasonerGrammarMatcher m(nullptr, budget_gate(3, -1), 40);
  for (int32_t left : {3, 2, 1}) {
    EXPECT_EQ(m.free_tokens(), left);
    EXPECT_TRUE(m.accept_token(kX));
  }
  EXPECT_EQ(m.free_tokens(), 0);  // forcing
  for (int32_t t : {kWord, kCloseA, kCloseB}) EXPECT_TRUE(m.accept_token(t));
  EXPECT_EQ(m.free_tokens(), std::numeric_limits<int32_t>::max());
}

TEST(ReasonerGrammarMatcher, AReasoningThatClosesWithinItsBudgetIsNotForced) {
  ReasonerGrammarMatcher m(nullptr, budget_gate(4, -1), 40);
  for (int32_t t : {kX, kCloseA, kCloseB, kY, kY, kY, kY, kY}) {
    EXPECT_FALSE(m.constrains_next());
    EXPECT_TRUE(m.accept_token(t));
  }
}

TEST(ReasonerGrammarMatcher, ABudgetCountsFromTheOpeningAndTheGrammarHoldsAfterTheClose) {
  ReasonerGrammarMatcher m(x_then_y(), budget_gate(2, kOpen));
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{kX, kOpen}));
  EXPECT_TRUE(m.accept_token(kOpen));
  EXPECT_TRUE(m.accept_token(kY));
  EXPECT_FALSE(m.constrains_next());
  EXPECT_TRUE(m.accept_token(kY));
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{kWord}));
  for (int32_t t : {kWord, kCloseA, kCloseB}) EXPECT_TRUE(m.accept_token(t));
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{kX}));
  EXPECT_TRUE(m.accept_token(kX));
}

TEST(ReasonerGrammarMatcher, ABudgetOfZeroClosesAtOnce) {
  ReasonerGrammarMatcher inside(nullptr, budget_gate(0, -1), 40);
  EXPECT_EQ(allowed(inside), (std::vector<int32_t>{kWord}));
  ReasonerGrammarMatcher opening(nullptr, budget_gate(0, kOpen), 40);
  EXPECT_FALSE(opening.constrains_next());  // no grammar: the first token is free
  EXPECT_TRUE(opening.accept_token(kOpen));
  EXPECT_EQ(allowed(opening), (std::vector<int32_t>{kWord}));
}

TEST(ReasonerGrammarMatcher, AnAnswerWithoutReasoningIsNeverForced) {
  ReasonerGrammarMatcher m(nullptr, budget_gate(1, kOpen), 40);
  for (int32_t t : {kX, kOpen, kY, kY, kEos}) {
    EXPECT_FALSE(m.constrains_next());
    EXPECT_TRUE(m.accept_token(t));
  }
}

}  // namespace
}  // namespace sgl::grammar
