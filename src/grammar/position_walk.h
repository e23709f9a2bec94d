// The classification walk behind TokenMaskCache: every token of the vocabulary trie from a probe
// frame at one automaton position, as accepted / uncertain / rejected (token_mask_cache.h).
//
// Byte steps go through a dense [set][byte] table (a probe's stack sets are few and numbered
// from 0). Inside a JSON string most of the vocabulary is accepted, and walking it costs a few
// ms: instead, where every plain character (printable ASCII but `"` and `\`, any valid UTF-8
// code point) leads to one same next set, for at least as many characters as a subtree's
// tokens add (forever in a string's character loop; up to the bound in a maxLength string),
// that trie subtree of plain text (TokenTrie::plain_text_below) is accepted whole, unvisited.
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
  // How many plain characters in a row any string of them may take from `set`, each leading
  // from one set to a single next set (kUnbounded where they loop): a bounded string's chain
  // of positions, or its character loop.
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
