// The per-request matcher: token steps, rollback, next-token bitmasks.
#include "grammar/grammar_matcher.h"

#include <cstring>

#include "core/check.h"

namespace sgl::grammar {
GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                               MatcherOptions options)
    : grammar_(std::move(grammar)), options_(options), engine_(grammar_->automaton()) {
  history_.push_back(Step{engine_.initial_set(), false});
}

void GrammarMatcher::reset() {
  const SetId start = history_.front().set;
  history_.assign(1, Step{start, false});
}

SetId GrammarMatcher::advance(SetId set, std::string_view bytes) {
  for (char c : bytes) {
    set = engine_.step(set, static_cast<uint8_t>(c));
    if (set == StackEngine::kDeadSet) break;
  }
  return set;
}

bool GrammarMatcher::accept_token(int32_t token_id) {
  if (is_terminated()) return false;
  const TokenizerInfo& info = grammar_->tokenizer();
  if (info.is_stop(token_id)) {
    if (!can_terminate()) return false;
    history_.push_back(Step{history_.back().set, true});
    return true;
  }
  if (!info.is_regular(token_id)) return false;
  return accept_bytes(info.token_bytes(token_id));
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (is_terminated()) return false;
  maybe_compact();
  const SetId next = advance(history_.back().set, bytes);
  if (next == StackEngine::kDeadSet) return false;
  history_.push_back(Step{next, false});
  return true;
}

void GrammarMatcher::rollback(int32_t n) {
  SGL_CHECK(n >= 0 && n <= num_steps())
      << "rollback of " << n << " steps with " << num_steps() << " accepted";
  history_.resize(history_.size() - n);
}

bool GrammarMatcher::can_terminate() const {
  return !is_terminated() && engine_.can_accept(history_.back().set);
}

void GrammarMatcher::maybe_compact() {
  if (engine_.num_sets() < options_.compact_sets &&
      engine_.num_frames() < options_.compact_frames) {
    return;
  }
  std::vector<SetId> roots;
  roots.reserve(history_.size());
  for (const Step& s : history_) roots.push_back(s.set);
  engine_.compact(roots);
  for (size_t i = 0; i < history_.size(); ++i) history_[i].set = roots[i];
  for (MaskMemo& m : memo_) m.set = -1;
}

void GrammarMatcher::fill_next_token_bitmask(uint32_t* bitmask) {
  const TokenizerInfo& info = grammar_->tokenizer();
  const size_t words = info.bitmask_words();
  if (is_terminated()) {
    std::memset(bitmask, 0, words * 4);
  } else {
    maybe_compact();
    const SetId set = history_.back().set;
    MaskMemo* hit = nullptr;
    for (MaskMemo& m : memo_) {
      if (m.set == set) hit = &m;
    }
    if (hit == nullptr) {
      hit = &memo_[memo_next_++ % memo_.size()];
      hit->set = -1;
      hit->bits.assign(words, 0);
      compute_mask(set, hit->bits.data());
      hit->set = set;
    }
    std::memcpy(bitmask, hit->bits.data(), words * 4);
    if (!engine_.can_accept(set)) return;
  }
  for (int32_t id : info.stop_ids()) bitmask[id >> 5] |= 1u << (id & 31);
}

void GrammarMatcher::compute_mask(SetId set, uint32_t* bitmask) {
  const TokenMaskCache& cache = grammar_->mask_cache();
  const size_t words = grammar_->tokenizer().bitmask_words();
  // Copy: the uncertain checks below add frames and may reallocate the engine's pool.
  const std::vector<FrameId> frames(engine_.frames(set).begin(), engine_.frames(set).end());
  for (FrameId f : frames) {
    const PositionMask& pm = cache.get(engine_.frame_at(f).state);
    if (!pm.accepted_bits.empty()) {
      for (size_t w = 0; w < words; ++w) bitmask[w] |= pm.accepted_bits[w];
    }
    for (int32_t id : pm.accepted_ids) bitmask[id >> 5] |= 1u << (id & 31);
  }
  for (FrameId f : frames) {
    const PositionMask& pm = cache.get(engine_.frame_at(f).state);
    if (!pm.uncertain.empty()) check_uncertain(engine_.singleton(f), pm.uncertain, bitmask);
  }
}

// Walks the uncertain tokens (trie nodes in preorder) from one real stack, sharing each common
// prefix with the token before and skipping every token under a rejected prefix.
void GrammarMatcher::check_uncertain(SetId start, const std::vector<TokenTrie::NodeId>& nodes,
                                     uint32_t* bitmask) {
  const TokenTrie& trie = grammar_->tokenizer().trie();
  path_nodes_.assign(1, 0);
  path_sets_.assign(1, start);
  TokenTrie::NodeId skip_until = -1;
  for (TokenTrie::NodeId u : nodes) {
    if (u < skip_until) continue;
    const auto ids = trie.tokens_at(u);
    if ((bitmask[ids[0] >> 5] >> (ids[0] & 31)) & 1u) continue;  // accepted by another frame
    while (!(path_nodes_.back() <= u && u < trie.subtree_end(path_nodes_.back()))) {
      path_nodes_.pop_back();
      path_sets_.pop_back();
    }
    chain_.clear();
    for (TokenTrie::NodeId v = u; v != path_nodes_.back(); v = trie.parent(v)) chain_.push_back(v);
    bool dead = false;
    for (auto it = chain_.rbegin(); it != chain_.rend(); ++it) {
      const SetId s = engine_.step(path_sets_.back(), trie.byte(*it));
      if (s == StackEngine::kDeadSet) {
        skip_until = trie.subtree_end(*it);
        dead = true;
        break;
      }
      path_nodes_.push_back(*it);
      path_sets_.push_back(s);
    }
    if (dead) continue;
    for (int32_t id : ids) bitmask[id >> 5] |= 1u << (id & 31);
  }
}

}  // namespace sgl::grammar
