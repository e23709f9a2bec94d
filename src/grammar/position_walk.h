// The classification walk behind TokenMaskCache: every token of the vocabulary trie from a probe
// frame at one automaton position, as accepted / uncertain / rejected (token_mask_cache.h).
//
// Byte steps go through a dense [set][byte] table (a probe's stack sets are few and numbered
// from 0). Inside a JSON string most of the vocabulary is accepted, and walking it costs a few
// ms: instead, from a set that every plain character (printable ASCII but `"` and `\`, any
// valid UTF-8 code point) leads back to (a string's character loop), each trie subtree of
// plain text (TokenTrie::plain_text_below) is accepted whole, unvisited. (Bounded strings'
// chains of sets are not followed: verifying each set costs more than walking; see
// perf-log/2026-11-29-grammar-first-use.md.)
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/stack_engine.h"
#include "grammar/token_trie.h"

namespace sgl::grammar {

class PositionWalker {
 public:
  PositionWalker(const GrammarAutomaton& automaton, const TokenTrie& trie);

  // Appends the accepted token ids and the trie nodes of uncertain tokens (in preorder) for a
  // stack whose top is at `state` and whose parent is unknown.
  void walk(StateId state, std::vector<int32_t>& accepted,
            std::vector<TokenTrie::NodeId>& uncertain);

 private:
  SetId step(SetId set, uint8_t byte);
  // How many plain characters in a row any string of them surely may take from `set`: a
  // lower bound, unbounded where they loop (a string's character loop), 0 for a set that 'a'
  // does not lead back to (not checked further).
  int32_t plain_run(SetId set);
  // The set every plain character leads to from `set` when they all lead to the same, live
  // one; -1 otherwise.
  SetId plain_successor(SetId set);
  // From `at`, inside a code point (UTF-8 state `utf8`), every valid continuation lives and
  // the completed code point reaches `target`.
  bool completes_to(SetId target, SetId at, uint8_t utf8);

  const TokenTrie& trie_;
  StackEngine engine_;
  std::vector<int32_t> dense_;      // [set * 256 + byte] -> set, -1: not stepped yet
  std::vector<int16_t> plain_run_;  // per set: -1 unknown, -2 being computed
  std::vector<std::pair<SetId, uint8_t>> completes_;  // (at, utf8) proven for the current target
  std::vector<SetId> chain_;
};

}  // namespace sgl::grammar
