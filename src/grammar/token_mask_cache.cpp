// Per automaton position: accepted / uncertain / rejected tokens, by a walk of the vocab trie.
#include "grammar/token_mask_cache.h"

#include "grammar/position_walk.h"

namespace sgl::grammar {

PositionMask compute_position_mask(const GrammarAutomaton& automaton, const TokenizerInfo& info,
                                   StateId state) {
  PositionMask out;
  std::vector<int32_t> accepted;
  PositionWalker(automaton, info.trie()).walk(state, accepted, out.uncertain);
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
