// Per automaton position, the tokens whose fate does not depend on the stack below it (the
// context-independent / context-dependent split xgrammar describes).
//
// From a stack whose top is at `state` (and whose parent is unknown), a token is
//   accepted  when some path consumes all its bytes inside the top rule (and rules it calls),
//             possibly finishing the rule exactly at its last byte;
//   uncertain when no path does, but some path finishes the top rule with bytes left over: the
//             parent decides (checked at run time, GrammarMatcher);
//   rejected  otherwise, whatever the stack below.
// Computed by walking the vocabulary trie from a probe frame whose parent is kBottom.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/plain_runs.h"
#include "grammar/tokenizer_info.h"

namespace sgl::grammar {

struct PositionMask {
  // The accepted tokens: a bitmask over token ids when many (bitmask_words words), else a list.
  std::vector<uint32_t> accepted_bits;
  std::vector<int32_t> accepted_ids;
  // Trie nodes (preorder) where uncertain tokens end.
  std::vector<TokenTrie::NodeId> uncertain;

  size_t memory_bytes() const {
    return accepted_bits.size() * 4 + accepted_ids.size() * 4 + uncertain.size() * 4;
  }
};

PositionMask compute_position_mask(const GrammarAutomaton& automaton, const PlainRuns& runs,
                                   const TokenizerInfo& info, StateId state);

// The masks of every position that consumes bytes, computed on first use. Thread-safe: a
// compiled grammar's cache is shared by all its matchers; each position is computed once.
class TokenMaskCache {
 public:
  TokenMaskCache(const GrammarAutomaton& automaton, const TokenizerInfo& info);

  const PositionMask& get(StateId state) const;
  // Computes every position now (compile time instead of first use).
  void precompute_all() const;
  // The positions computed so far.
  size_t memory_bytes() const { return memory_bytes_.load(); }

 private:
  const GrammarAutomaton& automaton_;
  const TokenizerInfo& info_;
  const PlainRuns runs_;
  std::unique_ptr<std::once_flag[]> once_;
  std::unique_ptr<PositionMask[]> masks_;  // written once under once_[state]
  mutable std::atomic<size_t> memory_bytes_{0};
};

}  // namespace sgl::grammar
