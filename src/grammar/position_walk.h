// The classification walk behind TokenMaskCache: every token of the vocabulary trie from a probe
// frame at one automaton position, as accepted / uncertain / rejected (token_mask_cache.h).
//
// Byte steps go through a dense [set][byte] table (a probe's stack sets are few and numbered
// from 0). Inside a JSON string most of the vocabulary is accepted, and walking it costs a few
// ms: instead, each trie subtree of plain text (TokenTrie::plain_text_below) no longer than
// the set's run of plain characters (printable ASCII but `"` and `\`, any valid UTF-8 code
// point) is accepted whole, unvisited. The run comes from the automaton's edges (PlainRuns:
// a string's character loop, a bounded string's chain), else from the stack engine for a set
// that every plain character leads back to.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/plain_runs.h"
#include "grammar/stack_engine.h"
#include "grammar/token_trie.h"

namespace sgl::grammar {

class PositionWalker {
 public:
  PositionWalker(const GrammarAutomaton& automaton, const PlainRuns& runs, const TokenTrie& trie);

  // How many plain characters in a row the probe at `state` surely takes (kUnboundedRun: any
  // number): every plain token of at most that many code points is accepted there.
  int32_t root_run(StateId state);
  // Appends the accepted token ids and the trie nodes of uncertain tokens (in preorder) for a
  // stack whose top is at `state` and whose parent is unknown. The plain tokens of at most
  // `covered` code points (covered <= root_run(state), kUnboundedRun: all) are left out of
  // `accepted`: the caller adds them as a PlainTokenSets bitmask.
  void walk(StateId state, int32_t covered, std::vector<int32_t>& accepted,
            std::vector<TokenTrie::NodeId>& uncertain);
  static constexpr int32_t kUnboundedRun = 0x7FFF;

 private:
  SetId step(SetId set, uint8_t byte);
  // How many plain characters in a row any string of them surely may take from `set`: a
  // lower bound, the longest of its frames' PlainRuns and of loop_run.
  int32_t plain_run(SetId set);
  // `set` is one frame whose run is exact (PlainRuns::exact) and, after `chars_to` plain
  // characters from the root, ends exactly at `covered` characters: every plain token through
  // here is accepted exactly when it is in PlainTokenSets::at_most(covered).
  bool exact_run_covered(SetId set, int32_t chars_to, int32_t covered) const;
  // The run found by stepping the engine: unbounded where the characters loop back to `set`,
  // 0 for a set that 'a' does not lead back to (not checked further).
  int32_t loop_run(SetId set);
  // The set every plain character leads to from `set` when they all lead to the same, live
  // one; -1 otherwise.
  SetId plain_successor(SetId set);
  // From `at`, inside a code point (UTF-8 state `utf8`), every valid continuation lives and
  // the completed code point reaches `target`.
  bool completes_to(SetId target, SetId at, uint8_t utf8);

  const PlainRuns& runs_;
  const TokenTrie& trie_;
  StackEngine engine_;
  std::vector<int32_t> dense_;      // [set * 256 + byte] -> set, -1: not stepped yet
  std::vector<int32_t> plain_run_;  // per set: -1 unknown
  std::vector<int16_t> loop_run_;   // per set: -1 unknown, -2 being computed
  std::vector<std::pair<SetId, uint8_t>> completes_;  // (at, utf8) proven for the current target
  std::vector<SetId> chain_;
};

}  // namespace sgl::grammar
