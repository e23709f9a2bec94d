// The classification walk behind TokenMaskCache: every token of the vocabulary trie from a probe
// frame at one automaton position, as accepted / uncertain / rejected (token_mask_cache.h).
//
// Byte steps go through a dense [set][byte] table (a probe's stack sets are few and numbered
// from 0). Inside a JSON string most of the vocabulary is accepted, and walking it costs a few
// ms: instead, a stack set that every plain character (printable ASCII but `"` and `\`, any
// valid UTF-8 code point) leads back to itself accepts, whole, each trie subtree whose tokens
// are plain text (TokenTrie::plain_text_below), without visiting it.
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
  // Every plain character leads from `set` back to `set` (through live sets).
  bool plain_loop(SetId set);
  // From `at`, inside a code point (UTF-8 state `utf8`), every valid continuation lives and
  // the completed code point returns to `home`.
  bool completes_to(SetId home, SetId at, uint8_t utf8);

  const TokenTrie& trie_;
  StackEngine engine_;
  std::vector<int32_t> dense_;      // [set * 256 + byte] -> set, -1: not stepped yet
  std::vector<int8_t> plain_loop_;  // per set: -1 unknown, 0 no, 1 yes
  std::vector<std::pair<SetId, uint8_t>> completes_;  // (at, utf8) proven for the current home
};

}  // namespace sgl::grammar
