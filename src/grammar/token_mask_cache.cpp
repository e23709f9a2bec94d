// Per automaton position: accepted / uncertain / rejected tokens, by a walk of the vocab trie.
#include "grammar/token_mask_cache.h"

#include <algorithm>

#include "grammar/position_walk.h"

namespace sgl::grammar {

PositionMask compute_position_mask(const GrammarAutomaton& automaton, const PlainRuns& runs,
                                   const TokenizerInfo& info, StateId state) {
  PositionMask out;
  std::vector<int32_t> accepted;
  PositionWalker walker(automaton, runs, info);
  // Inside a string most of the vocabulary is plain tokens short enough: they come as one
  // bitmask of the tokenizer's (when a bitmask is the smaller form anyway).
  const PlainTokenSets& plain = info.plain_tokens();
  const int32_t run = walker.root_run(state);
  const int32_t k = std::min(run, plain.longest());
  const bool from_bits =
      k > 0 && static_cast<int64_t>(plain.count_at_most(k)) * 32 > info.vocab_size();
  const auto loop_bits = walker.walk(state, from_bits ? run : 0, accepted, out.uncertain);
  // A list costs 32 bits a token, the bitmask one bit a vocab entry.
  if (from_bits || !loop_bits.empty() ||
      static_cast<int64_t>(accepted.size()) * 32 > info.vocab_size()) {
    if (from_bits) {
      out.accepted_bits.assign(plain.at_most(k).begin(), plain.at_most(k).end());
    } else {
      out.accepted_bits.assign(info.bitmask_words(), 0);
    }
    for (size_t w = 0; w < loop_bits.size(); ++w) out.accepted_bits[w] |= loop_bits[w];
    for (int32_t id : accepted) out.accepted_bits[id >> 5] |= 1u << (id & 31);
  } else {
    out.accepted_ids = std::move(accepted);
  }
  return out;
}

TokenMaskCache::TokenMaskCache(const GrammarAutomaton& automaton, const TokenizerInfo& info)
    : automaton_(automaton),
      info_(info),
      runs_(automaton),
      once_(new std::once_flag[automaton.num_states()]),
      masks_(new PositionMask[automaton.num_states()]) {}

const PositionMask& TokenMaskCache::get(StateId state) const {
  std::call_once(once_[state], [&] {
    masks_[state] = compute_position_mask(automaton_, runs_, info_, state);
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
