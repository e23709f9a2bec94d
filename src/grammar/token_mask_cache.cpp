// Per automaton position: accepted / uncertain / rejected tokens, by a walk of the vocab trie.
#include "grammar/token_mask_cache.h"

#include "grammar/stack_engine.h"

namespace sgl::grammar {

PositionMask compute_position_mask(const GrammarAutomaton& automaton, const TokenizerInfo& info,
                                   StateId state) {
  PositionMask out;
  const TokenTrie& trie = info.trie();
  const int32_t n = trie.num_nodes();
  StackEngine engine(automaton);
  // By depth along the current trie path: the set after that many bytes, and whether a stack
  // had popped past the probe's base with bytes still to come (then the parent decides).
  std::vector<SetId> set_at = {engine.singleton(engine.frame(state, kBottom))};
  std::vector<uint8_t> crossed = {0};
  std::vector<int32_t> accepted;
  auto add_uncertain_subtree = [&](TokenTrie::NodeId from, TokenTrie::NodeId end) {
    for (TokenTrie::NodeId v = from; v < end; ++v) {
      if (!trie.tokens_at(v).empty()) out.uncertain.push_back(v);
    }
  };
  TokenTrie::NodeId node = 1;
  while (node < n) {
    const int32_t d = trie.depth(node);
    const SetId s = engine.step(set_at[d - 1], trie.byte(node));
    const auto ids = trie.tokens_at(node);
    if (!ids.empty()) {
      if (s != StackEngine::kDeadSet) {
        accepted.insert(accepted.end(), ids.begin(), ids.end());
      } else if (crossed[d - 1]) {
        out.uncertain.push_back(node);
      }
    }
    const bool c = crossed[d - 1] != 0 || engine.reached_bottom(s);
    if (engine.frames(s).empty()) {
      // Nothing left inside the rule: longer tokens are the parent's business, or dead.
      if (c) add_uncertain_subtree(node + 1, trie.subtree_end(node));
      node = trie.subtree_end(node);
      continue;
    }
    if (static_cast<int32_t>(set_at.size()) <= d) {
      set_at.resize(d + 1);
      crossed.resize(d + 1);
    }
    set_at[d] = s;
    crossed[d] = c ? 1 : 0;
    ++node;
  }
  // A list costs 32 bits a token, the bitmask one bit a vocab entry.
  if (static_cast<int64_t>(accepted.size()) * 32 > info.vocab_size()) {
    out.accepted_bits.assign(info.bitmask_words(), 0);
    for (int32_t id : accepted) out.accepted_bits[id >> 5] |= 1u << (id & 31);
  } else {
    out.accepted_ids = std::move(accepted);
  }
  return out;
}

TokenMaskCache::TokenMaskCache(const GrammarAutomaton& automaton, const TokenizerInfo& info)
    : automaton_(automaton),
      info_(info),
      once_(new std::once_flag[automaton.num_states()]),
      masks_(new PositionMask[automaton.num_states()]) {}

const PositionMask& TokenMaskCache::get(StateId state) const {
  std::call_once(once_[state], [&] {
    masks_[state] = compute_position_mask(automaton_, info_, state);
    memory_bytes_ += masks_[state].memory_bytes();
  });
  return masks_[state];
}

void TokenMaskCache::precompute_all() const {
  for (StateId s = 0; s < automaton_.num_states(); ++s) {
    if (!automaton_.byte_edges(s).empty()) get(s);
  }
}

}  // namespace sgl::grammar
