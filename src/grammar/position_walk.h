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
//
// A set that is one isolated frame whose state every byte of a class leads back to (a
// character loop: a JSON string, an email's local part, a URI's characters) stays the same
// along any class path of the trie: from there only the class's exit nodes (ClassTokenSets) are
// stepped, the class tokens come as one bitmask (at the root) or a list.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/plain_runs.h"
#include "grammar/stack_engine.h"
#include "grammar/token_trie.h"
#include "grammar/tokenizer_info.h"

namespace sgl::grammar {

class PositionWalker {
 public:
  PositionWalker(const GrammarAutomaton& automaton, const PlainRuns& runs,
                 const TokenizerInfo& info);

  // How many plain characters in a row the probe at `state` surely takes (kUnboundedRun: any
  // number): every plain token of at most that many code points is accepted there.
  int32_t root_run(StateId state);
  // Appends the accepted token ids and the trie nodes of uncertain tokens (in preorder) for a
  // stack whose top is at `state` and whose parent is unknown. The plain tokens of at most
  // `covered` code points (covered <= root_run(state), kUnboundedRun: all) are left out of
  // `accepted`: the caller adds them as a PlainTokenSets bitmask. Returns a bitmask of more
  // accepted tokens (a class loop's, ClassTokenSets::bits) or an empty span.
  std::span<const uint32_t> walk(StateId state, int32_t covered, std::vector<int32_t>& accepted,
                                 std::vector<TokenTrie::NodeId>& uncertain);
  static constexpr int32_t kUnboundedRun = 0x7FFF;

 private:
  SetId step(SetId set, uint8_t byte);
  // Walks the nodes [from, end) (whole subtrees), the set before `from` being set_at_[depth - 1].
  void walk_range(TokenTrie::NodeId from, TokenTrie::NodeId stop);
  // The class tokens of `set` when it is a class loop (see above); nullptr otherwise.
  const ClassTokenSets* loop_class(SetId set);
  // Every path from the root to `node` is of class characters.
  bool on_class_path(const ClassTokenSets& cls, TokenTrie::NodeId node);
  // The walk from a root set that is one frame of an exact chain (PlainRuns::exact) of `run`
  // plain characters, the caller's bitmask holding the plain tokens of at most `run`: only the
  // plain class's exits are stepped, from the chain's set after their plain prefix.
  void walk_exact_chain(SetId root, int32_t run);
  // Steps the exits of `cls` in (node, end), the set at `node` being `set` (the loop's) and
  // `crossed` whether a stack popped past the probe's base on the way.
  void walk_exits(const ClassTokenSets& cls, TokenTrie::NodeId node, TokenTrie::NodeId end,
                  SetId set, uint8_t crossed);
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

  const GrammarAutomaton& automaton_;
  const PlainRuns& runs_;
  const TokenizerInfo& info_;
  const TokenTrie& trie_;
  StackEngine engine_;
  std::vector<int32_t> dense_;      // [set * 256 + byte] -> set, -1: not stepped yet
  std::vector<int32_t> plain_run_;  // per set: -1 unknown
  std::vector<int16_t> loop_run_;   // per set: -1 unknown, -2 being computed
  std::vector<std::pair<SetId, uint8_t>> completes_;  // (at, utf8) proven for the current target
  std::vector<SetId> chain_;                          // loop_run's scratch
  std::vector<SetId> exact_chain_;  // walk_exact_chain: the set after j plain characters
  // The walk: by depth along the current trie path, the set after that many bytes and whether
  // a stack had popped past the probe's base with bytes still to come (then the parent
  // decides); where the results go; the cover of the caller's plain bitmask.
  std::vector<SetId> set_at_;
  std::vector<uint8_t> crossed_;
  std::vector<int32_t>* accepted_ = nullptr;
  std::vector<TokenTrie::NodeId>* uncertain_ = nullptr;
  int32_t covered_ = 0;
  // Per set: 0 unknown, 1 not a class loop, 2 a loop of loop_classes_[set].
  std::vector<uint8_t> loop_known_;
  std::vector<std::shared_ptr<const ClassTokenSets>> loop_classes_;
  std::vector<uint8_t> partial_;  // scratch: the bytes of a cut character before an exit
  std::vector<uint8_t> path_;     // scratch: a trie path's bytes, last first
  std::vector<StateId> states_;   // scratch: a candidate loop's states
  std::vector<StateId> reached_;  // scratch: the states a byte leads them to
};

}  // namespace sgl::grammar
