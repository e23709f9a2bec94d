// Per automaton state: how many plain characters in a row (printable ASCII but `"` and `\`, any
// valid UTF-8 code point, the last one possibly cut) a frame at that state surely takes by its
// own byte edges. The mask walk accepts a trie subtree of plain text whole, unvisited, when some
// frame of the current stack set has a run at least as long as the subtree's tokens: inside a
// JSON string (a loop: unbounded) and inside a `maxLength` string (a chain of states, one per
// character: the remaining length).
//
// Read from the automaton's edges alone (no stack steps), once per grammar at compile time;
// immutable afterwards, so shared by every thread computing the grammar's masks.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "grammar/automaton.h"

namespace sgl::grammar {

class PlainRuns {
 public:
  static constexpr int32_t kUnbounded = std::numeric_limits<int32_t>::max();

  explicit PlainRuns(const GrammarAutomaton& automaton);

  // A lower bound on the run from a frame at `state`, whatever its parent: each plain
  // character (or a prefix of one) leads through `state`'s byte edges to a state with byte
  // edges, so a stack set holding the frame stays live.
  int32_t run(StateId state) const { return runs_[state]; }
  // The run is also an upper bound, for a stack set that is this one frame: after run(state)
  // plain characters any further one (or a prefix of one) kills the set, and on the way the
  // set stays one frame of a state that neither calls nor finishes its rule (no pop: what
  // dies is rejected, not left to the parent). A bounded string's chain.
  bool exact(StateId state) const { return exact_[state] != 0; }
  // Every multibyte character leads from a frame at `state` back to that frame alone: each
  // of its bytes has edges to one state only, none of which calls or finishes its rule (a JSON
  // string's character loop). Its ASCII bytes are not checked here.
  bool multibyte_loop(StateId state) const { return multibyte_loop_[state] != 0; }

 private:
  std::vector<int32_t> runs_;
  std::vector<int8_t> exact_;
  std::vector<int8_t> multibyte_loop_;
};

}  // namespace sgl::grammar
