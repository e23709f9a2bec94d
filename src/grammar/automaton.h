// The grammar as a byte-level pushdown automaton: one epsilon-free NFA per rule, whose edges
// consume a byte range or call another rule (push a return state, continue at that rule's
// start). A recursive transition network, as xgrammar builds: repetition becomes loops inside a
// rule, so only real recursion (nested JSON) grows the stack.
//
// build_automaton also checks what makes a grammar unusable: an undefined rule body, left
// recursion (direct or through nullable rules), a root that accepts no string, or a size past
// the limits. It trims what can never finish (rules that only recurse, empty classes), so every
// state the matcher reaches can still be completed to an accepted string.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/grammar.h"

namespace sgl::grammar {

using StateId = int32_t;

struct ByteEdge {
  uint8_t lo = 0;
  uint8_t hi = 0;
  StateId target = -1;
};

struct CallEdge {
  RuleId rule = -1;
  StateId target = -1;  // the return state
};

inline constexpr int32_t kMaxAutomatonStates = 1 << 20;
// States visited by the epsilon closures of a grammar's build, all rules together: a repetition
// of something that may be empty, `(a?){0,100000}`, has closures across all its copies (work and
// edges growing with the square of the bound).
inline constexpr int64_t kMaxClosureWork = int64_t{1} << 25;

// Immutable once built; shared read-only by every matcher of a compiled grammar.
class GrammarAutomaton {
 public:
  RuleId root() const { return root_; }
  int32_t num_rules() const { return static_cast<int32_t>(rule_start_.size()); }
  int32_t num_states() const { return static_cast<int32_t>(state_rule_.size()); }
  StateId rule_start(RuleId r) const { return rule_start_[r]; }
  const std::string& rule_name(RuleId r) const { return rule_names_[r]; }
  RuleId state_rule(StateId s) const { return state_rule_[s]; }
  bool is_final(StateId s) const { return final_[s] != 0; }
  std::span<const ByteEdge> byte_edges(StateId s) const {
    return {byte_edges_.data() + byte_offset_[s], byte_edges_.data() + byte_offset_[s + 1]};
  }
  std::span<const CallEdge> call_edges(StateId s) const {
    return {call_edges_.data() + call_offset_[s], call_edges_.data() + call_offset_[s + 1]};
  }
  // One line per state, for debugging and tests.
  std::string debug_string() const;

 private:
  friend class AutomatonBuilder;
  RuleId root_ = -1;
  std::vector<StateId> rule_start_;  // -1: rule unreachable from the root (not built)
  std::vector<std::string> rule_names_;
  std::vector<RuleId> state_rule_;
  std::vector<uint8_t> final_;
  std::vector<int32_t> byte_offset_;  // CSR: state s's edges are [offset[s], offset[s+1])
  std::vector<ByteEdge> byte_edges_;
  std::vector<int32_t> call_offset_;
  std::vector<CallEdge> call_edges_;
};

Result<GrammarAutomaton> build_automaton(const Grammar& grammar);

}  // namespace sgl::grammar
