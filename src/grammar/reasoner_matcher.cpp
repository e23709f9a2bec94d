// The reasoning gate in front of a request's grammar (reasoner_matcher.h).
#include "grammar/reasoner_matcher.h"

#include <algorithm>
#include <limits>

#include "core/check.h"

namespace sgl::grammar {

ReasonerGrammarMatcher::ReasonerGrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                                               ReasoningGate gate, int64_t vocab_size)
    : gate_(std::move(gate)) {
  if (grammar) {
    matcher_.emplace(std::move(grammar));
    bitmask_words_ = matcher_->bitmask_words();
  } else {
    SGL_CHECK(gate_.has_budget() && !gate_.empty() && vocab_size > 0)
        << "a reasoning gate without a grammar needs a budget and the vocabulary's size";
    bitmask_words_ = static_cast<int32_t>((vocab_size + 31) / 32);
  }
  SGL_CHECK(!gate_.has_budget() || !gate_.budget_end_ids.empty())
      << "a thinking budget needs the tokens that close the reasoning";
  if (gate_.empty()) {
    phase_ = Phase::kAnswer;
  } else {
    phase_ = gate_.start_id < 0 ? Phase::kReasoning : Phase::kMayOpen;
  }
  if (phase_ == Phase::kReasoning && gate_.max_tokens == 0) phase_ = Phase::kClosing;
}

bool ReasonerGrammarMatcher::constrains_next() const {
  switch (phase_) {
    case Phase::kMayOpen:
    case Phase::kAnswer:
      return matcher_.has_value();
    case Phase::kReasoning:
      return false;
    case Phase::kClosing:
      return true;
  }
  return false;
}

int32_t ReasonerGrammarMatcher::free_tokens() const {
  if (matcher_) return 0;
  switch (phase_) {
    case Phase::kAnswer:
      return std::numeric_limits<int32_t>::max();
    case Phase::kMayOpen:  // the opening token, then the whole budget
      return gate_.max_tokens + 1;
    case Phase::kReasoning:
      return gate_.max_tokens - reasoning_tokens_;
    case Phase::kClosing:
      return 0;
  }
  return 0;
}

void ReasonerGrammarMatcher::fill_next_token_bitmask(uint32_t* bitmask) {
  if (phase_ == Phase::kClosing) {
    std::fill_n(bitmask, bitmask_words_, 0u);
    const int32_t id = gate_.budget_end_ids[forced_];
    bitmask[id >> 5] |= 1u << (id & 31);
    return;
  }
  matcher_->fill_next_token_bitmask(bitmask);
  if (phase_ == Phase::kMayOpen) {
    const int32_t id = gate_.start_id;
    bitmask[id >> 5] |= 1u << (id & 31);
  }
}

void ReasonerGrammarMatcher::rollback(int32_t n) {
  SGL_CHECK(checks_drafts()) << "a rollback outside the grammar's answer";
  matcher_->rollback(n);
}

bool ReasonerGrammarMatcher::accept_token(int32_t token_id) {
  switch (phase_) {
    case Phase::kMayOpen:
      if (token_id == gate_.start_id) {
        phase_ = gate_.max_tokens == 0 ? Phase::kClosing : Phase::kReasoning;
        return true;
      }
      if (matcher_ && !matcher_->accept_token(token_id)) return false;
      phase_ = Phase::kAnswer;
      return true;
    case Phase::kReasoning: {
      // The reasoning ends once its last tokens are the closing ids.
      const size_t n = gate_.end_ids.size();
      if (recent_.size() == n) recent_.erase(recent_.begin());
      recent_.push_back(token_id);
      if (recent_ == gate_.end_ids) {
        phase_ = Phase::kAnswer;
      } else if (gate_.has_budget() && ++reasoning_tokens_ >= gate_.max_tokens) {
        phase_ = Phase::kClosing;
      }
      return true;
    }
    case Phase::kClosing:
      if (token_id != gate_.budget_end_ids[forced_]) return false;
      if (++forced_ == gate_.budget_end_ids.size()) phase_ = Phase::kAnswer;
      return true;
    case Phase::kAnswer:
      return !matcher_ || matcher_->accept_token(token_id);
  }
  return false;
}

}  // namespace sgl::grammar
