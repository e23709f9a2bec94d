// The per-position classification walk over the vocabulary trie.
#include "grammar/position_walk.h"

#include <algorithm>

#include "grammar/utf8.h"

namespace sgl::grammar {
namespace {

// Subtrees smaller than this are walked: the loop check would cost more than it saves.
constexpr int32_t kMinSkipNodes = 4;
// Sets followed along a chain of plain successors: enough to find a string's character loop;
// a bounded string's long chain would cost more steps than walking its subtrees (measured:
// perf-log/2026-11-29-grammar-first-use.md).
constexpr size_t kMaxChain = 2;

bool plain_ascii(int b) { return b >= 0x20 && b < 0x7F && b != '"' && b != '\\'; }

}  // namespace

PositionWalker::PositionWalker(const GrammarAutomaton& automaton, const PlainRuns& runs,
                               const TokenTrie& trie)
    : runs_(runs), trie_(trie), engine_(automaton) {}

SetId PositionWalker::step(SetId set, uint8_t byte) {
  const size_t k = static_cast<size_t>(set) * 256 + byte;
  if (k >= dense_.size()) dense_.resize(std::max(dense_.size() * 2, k - byte + 256), -1);
  int32_t& next = dense_[k];
  if (next < 0) next = engine_.step(set, byte);
  return next;
}

bool PositionWalker::completes_to(SetId target, SetId at, uint8_t utf8) {
  const std::pair<SetId, uint8_t> key{at, utf8};
  if (std::find(completes_.begin(), completes_.end(), key) != completes_.end()) return true;
  for (int b = 0x80; b < 0x100; ++b) {
    const uint8_t u = utf8_next_state(utf8, static_cast<uint8_t>(b));
    if (u == kUtf8Invalid) continue;
    const SetId next = step(at, static_cast<uint8_t>(b));
    if (next == StackEngine::kDeadSet) return false;
    if (u == 0 ? next != target : !completes_to(target, next, u)) return false;
  }
  completes_.push_back(key);
  return true;
}

SetId PositionWalker::plain_successor(SetId set) {
  const SetId target = step(set, 'a');
  if (target == StackEngine::kDeadSet) return -1;
  for (int b = 0; b < 0x80; ++b) {
    if (plain_ascii(b) && step(set, static_cast<uint8_t>(b)) != target) return -1;
  }
  completes_.clear();
  for (int b = 0xC2; b <= 0xF4; ++b) {
    const SetId next = step(set, static_cast<uint8_t>(b));
    if (next == StackEngine::kDeadSet) return -1;
    if (!completes_to(target, next, utf8_next_state(0, static_cast<uint8_t>(b)))) return -1;
  }
  return target;
}

int32_t PositionWalker::plain_run(SetId set) {
  if (static_cast<size_t>(set) >= plain_run_.size()) {
    plain_run_.resize(std::max<size_t>(plain_run_.size() * 2, set + 1), -1);
  }
  if (plain_run_[set] >= 0) return plain_run_[set];
  int32_t run = 0;
  for (FrameId f : engine_.frames(set)) {
    run = std::max(run, runs_.run(engine_.frame_at(f).state));
  }
  run = run == PlainRuns::kUnbounded ? kUnboundedRun
                                     : std::max(std::min(run, kUnboundedRun - 1), loop_run(set));
  plain_run_[set] = run;
  return run;
}

int32_t PositionWalker::loop_run(SetId set) {
  auto slot = [&](SetId s) -> int16_t& {
    if (static_cast<size_t>(s) >= loop_run_.size()) {
      loop_run_.resize(std::max<size_t>(loop_run_.size() * 2, s + 1), -1);
    }
    return loop_run_[s];
  };
  // Follow the chain of single successors to a known run, a dead end or a cycle (unbounded),
  // then fill it in backwards.
  // Only a set that 'a' leads back to can be a character loop: other sets (a bounded string's
  // chain) are not checked at all, as each check costs ~800 engine steps.
  if (slot(set) == -1 && step(set, 'a') != set) slot(set) = 0;
  chain_.clear();
  int32_t run = 0;
  for (SetId s = set;;) {
    const int16_t known = slot(s);
    if (known == -2) {
      run = kUnboundedRun;  // back on the chain: the characters loop
      break;
    }
    if (known >= 0) {
      run = known;
      break;
    }
    if (chain_.size() == kMaxChain) {
      run = -1;  // not followed further: each plain_successor costs ~800 engine steps
      break;
    }
    slot(s) = -2;
    chain_.push_back(s);
    const SetId next = plain_successor(s);
    if (next < 0) {
      run = -1;  // s itself takes no plain character for sure
      break;
    }
    s = next;
  }
  for (auto it = chain_.rbegin(); it != chain_.rend(); ++it) {
    run = run == kUnboundedRun ? kUnboundedRun : std::min<int32_t>(run + 1, kUnboundedRun - 1);
    slot(*it) = static_cast<int16_t>(run);
  }
  return slot(set);
}

bool PositionWalker::exact_run_covered(SetId set, int32_t chars_to, int32_t covered) const {
  const auto frames = engine_.frames(set);
  if (frames.size() != 1 || chars_to == TokenTrie::kNotPlain || covered == kUnboundedRun) {
    return false;
  }
  const StateId state = engine_.frame_at(frames[0]).state;
  return runs_.exact(state) && chars_to + runs_.run(state) == covered;
}

int32_t PositionWalker::root_run(StateId state) {
  return plain_run(engine_.singleton(engine_.frame(state, kBottom)));
}

void PositionWalker::walk(StateId state, int32_t covered, std::vector<int32_t>& accepted,
                          std::vector<TokenTrie::NodeId>& uncertain) {
  const TokenTrie& trie = trie_;
  const int32_t n = trie.num_nodes();
  // By depth along the current trie path: the set after that many bytes, and whether a stack
  // had popped past the probe's base with bytes still to come (then the parent decides).
  std::vector<SetId> set_at = {engine_.singleton(engine_.frame(state, kBottom))};
  std::vector<uint8_t> crossed = {0};
  auto add_uncertain_subtree = [&](TokenTrie::NodeId from, TokenTrie::NodeId end) {
    for (TokenTrie::NodeId v = from; v < end; ++v) {
      if (!trie.tokens_at(v).empty()) uncertain.push_back(v);
    }
  };
  TokenTrie::NodeId node = 1;
  while (node < n) {
    const int32_t d = trie.depth(node);
    const SetId s = step(set_at[d - 1], trie.byte(node));
    const auto ids = trie.tokens_at(node);
    if (!ids.empty()) {
      if (s != StackEngine::kDeadSet) {
        accepted.insert(accepted.end(), ids.begin(), ids.end());
      } else if (crossed[d - 1]) {
        uncertain.push_back(node);
      }
    }
    const bool c = crossed[d - 1] != 0 || engine_.reached_bottom(s);
    const TokenTrie::NodeId end = trie.subtree_end(node);
    if (engine_.frames(s).empty()) {
      // Nothing left inside the rule: longer tokens are the parent's business, or dead.
      if (c) add_uncertain_subtree(node + 1, end);
      node = end;
      continue;
    }
    // (chars_below is capped at 255: there only a run without end is enough.)
    const int32_t below_chars =
        trie.chars_below(node) < 255 ? trie.chars_below(node) : kUnboundedRun;
    if (end - node > kMinSkipNodes && trie.plain_text_below(node) && plain_run(s) >= below_chars) {
      // Every token below only adds plain characters, no more than s's run of them: all live.
      // Below a plain path from the root they are plain tokens: the caller's bitmask has them.
      const int32_t to = trie.plain_chars_to(node);
      const bool in_bitmask = to != TokenTrie::kNotPlain &&
                              (covered == kUnboundedRun ||
                               (below_chars != kUnboundedRun && to + below_chars <= covered));
      if (!in_bitmask) {
        const auto below = trie.tokens_in(node + 1, end);
        accepted.insert(accepted.end(), below.begin(), below.end());
      }
      node = end;
      continue;
    }
    if (end - node > kMinSkipNodes && trie.plain_text_below(node) && !c &&
        exact_run_covered(s, trie.plain_chars_to(node), covered)) {
      // Below: plain tokens, live up to s's exact run (so in the caller's bitmask), the
      // longer ones dead and rejected.
      node = end;
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
}

}  // namespace sgl::grammar
