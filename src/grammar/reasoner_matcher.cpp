// The reasoning gate in front of a request's grammar (reasoner_matcher.h).
#include "grammar/reasoner_matcher.h"

namespace sgl::grammar {

ReasonerGrammarMatcher::ReasonerGrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                                               ReasoningGate gate)
    : matcher_(std::move(grammar)), gate_(std::move(gate)) {
  if (gate_.empty()) {
    phase_ = Phase::kAnswer;
  } else {
    phase_ = gate_.start_id < 0 ? Phase::kReasoning : Phase::kMayOpen;
  }
}

void ReasonerGrammarMatcher::fill_next_token_bitmask(uint32_t* bitmask) {
  matcher_.fill_next_token_bitmask(bitmask);
  if (phase_ == Phase::kMayOpen) {
    const int32_t id = gate_.start_id;
    bitmask[id >> 5] |= 1u << (id & 31);
  }
}

bool ReasonerGrammarMatcher::accept_token(int32_t token_id) {
  switch (phase_) {
    case Phase::kMayOpen:
      if (token_id == gate_.start_id) {
        phase_ = Phase::kReasoning;
        return true;
      }
      if (!matcher_.accept_token(token_id)) return false;
      phase_ = Phase::kAnswer;
      return true;
    case Phase::kReasoning: {
      // The reasoning ends once its last tokens are the closing ids.
      const size_t n = gate_.end_ids.size();
      if (recent_.size() == n) recent_.erase(recent_.begin());
      recent_.push_back(token_id);
      if (recent_ == gate_.end_ids) phase_ = Phase::kAnswer;
      return true;
    }
    case Phase::kAnswer:
      return matcher_.accept_token(token_id);
  }
  return false;
}

}  // namespace sgl::grammar
