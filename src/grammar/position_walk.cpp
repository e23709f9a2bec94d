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
// A class loop of more frames than this is walked node by node (the check is per byte).
constexpr size_t kMaxLoopFrames = 8;

bool plain_ascii(int b) { return b >= 0x20 && b < 0x7F && b != '"' && b != '\\'; }

}  // namespace

PositionWalker::PositionWalker(const GrammarAutomaton& automaton, const PlainRuns& runs,
                               const TokenizerInfo& info)
    : automaton_(automaton), runs_(runs), info_(info), trie_(info.trie()), engine_(automaton) {}

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

const ClassTokenSets* PositionWalker::loop_class(SetId set) {
  if (static_cast<size_t>(set) >= loop_known_.size()) {
    const size_t size = std::max<size_t>(loop_known_.size() * 2, set + 1);
    loop_known_.resize(size, 0);
    loop_classes_.resize(size);
  }
  if (loop_known_[set] != 0) return loop_known_[set] == 2 ? loop_classes_[set].get() : nullptr;
  loop_known_[set] = 1;
  // Frames of one parent whose states neither finish nor call: the class is the bytes whose
  // edges lead from those states to exactly those states again (an NFA's loop may be several).
  const auto frames = engine_.frames(set);
  if (frames.empty() || frames.size() > kMaxLoopFrames) return nullptr;
  const FrameId parent = engine_.frame_at(frames[0]).parent;
  states_.clear();
  for (FrameId f : frames) {
    const Frame& fr = engine_.frame_at(f);
    if (fr.parent != parent || automaton_.is_final(fr.state) ||
        !automaton_.call_edges(fr.state).empty()) {
      return nullptr;
    }
    states_.push_back(fr.state);
  }
  std::sort(states_.begin(), states_.end());
  // Bytes with an edge out of the states (those without one are not in the class).
  ByteClass cls, out;
  for (StateId x : states_) {
    for (const ByteEdge& e : automaton_.byte_edges(x)) {
      const bool back = std::binary_search(states_.begin(), states_.end(), e.target);
      for (int b = e.lo; b <= std::min<int>(e.hi, 0x7F); ++b) {
        (back ? cls : out).add(static_cast<uint8_t>(b));
      }
    }
  }
  for (int w = 0; w < 2; ++w) cls.ascii[w] &= ~out.ascii[w];
  // Every state must be reached again by each class byte.
  for (int b = 0; b < 0x80 && !cls.empty(); ++b) {
    if (!cls.has(static_cast<uint8_t>(b))) continue;
    reached_.clear();
    for (StateId x : states_) {
      for (const ByteEdge& e : automaton_.byte_edges(x)) {
        if (e.lo <= b && b <= e.hi) reached_.push_back(e.target);
      }
    }
    std::sort(reached_.begin(), reached_.end());
    reached_.erase(std::unique(reached_.begin(), reached_.end()), reached_.end());
    if (reached_ != states_) {
      cls.ascii[b >> 6] &= ~(uint64_t{1} << (b & 63));
    }
  }
  const StateId x = states_[0];
  cls.utf8 = states_.size() == 1 && runs_.multibyte_loop(x);
  if (cls.empty()) return nullptr;
  auto sets = info_.class_tokens(cls);
  if (sets == nullptr) return nullptr;
  loop_known_[set] = 2;
  loop_classes_[set] = std::move(sets);
  return loop_classes_[set].get();
}

bool PositionWalker::on_class_path(const ClassTokenSets& cls, TokenTrie::NodeId node) {
  // Decoded from the root (paths are short).
  path_.clear();
  for (TokenTrie::NodeId v = node; v != 0; v = trie_.parent(v)) path_.push_back(trie_.byte(v));
  uint8_t utf8 = 0;
  for (auto it = path_.rbegin(); it != path_.rend(); ++it) {
    const uint8_t b = *it;
    if (utf8 == 0 && b < 0x80) {
      if (!cls.byte_class().has(b)) return false;
    } else {
      if (!cls.byte_class().utf8) return false;
      utf8 = utf8_next_state(utf8, b);
      if (utf8 == kUtf8Invalid) return false;
    }
  }
  return utf8 == 0;
}

void PositionWalker::walk_exits(const ClassTokenSets& cls, TokenTrie::NodeId node,
                                TokenTrie::NodeId end, SetId set, uint8_t crossed) {
  const auto& exits = cls.exits();
  for (auto it = std::lower_bound(exits.begin(), exits.end(), node + 1);
       it != exits.end() && *it < end; ++it) {
    const TokenTrie::NodeId e = *it;
    // The set at e's parent: the loop's, or inside a multibyte character, the loop's stepped
    // through the character's bytes so far.
    SetId at = set;
    partial_.clear();
    for (TokenTrie::NodeId v = trie_.parent(e); v != node && trie_.byte(v) >= 0x80;
         v = trie_.parent(v)) {
      partial_.push_back(trie_.byte(v));
    }
    // partial_ holds the non-ASCII bytes above e, nearest first: keep those after the last
    // complete character.
    uint8_t utf8 = 0;
    size_t from = partial_.size();
    for (size_t k = partial_.size(); k-- > 0;) {
      utf8 = utf8_next_state(utf8, partial_[k]);
      if (utf8 == 0) from = k;
    }
    for (size_t k = from; k-- > 0;) at = step(at, partial_[k]);
    const int32_t d = trie_.depth(e);
    if (static_cast<int32_t>(set_at_.size()) < d) {
      set_at_.resize(d);
      crossed_.resize(d);
    }
    set_at_[d - 1] = at;
    crossed_[d - 1] = crossed;
    walk_range(e, trie_.subtree_end(e));
  }
}

std::span<const uint32_t> PositionWalker::walk(StateId state, int32_t covered,
                                               std::vector<int32_t>& accepted,
                                               std::vector<TokenTrie::NodeId>& uncertain) {
  accepted_ = &accepted;
  uncertain_ = &uncertain;
  covered_ = covered;
  const SetId root = engine_.singleton(engine_.frame(state, kBottom));
  set_at_.assign(1, root);
  crossed_.assign(1, 0);
  if (const ClassTokenSets* cls = loop_class(root)) {
    walk_exits(*cls, 0, trie_.num_nodes(), root, 0);
    return cls->bits();
  }
  if (covered > 0 && covered < TokenTrie::kNotPlain && runs_.exact(state) &&
      runs_.run(state) == covered) {
    walk_exact_chain(root, covered);
    return {};
  }
  walk_range(1, trie_.num_nodes());
  return {};
}

void PositionWalker::walk_exact_chain(SetId root, int32_t run) {
  ByteClass plain;
  for (int b = 0x20; b < 0x7F; ++b) {
    if (b != '"' && b != '\\') plain.add(static_cast<uint8_t>(b));
  }
  plain.utf8 = true;
  const auto cls = info_.class_tokens(plain);
  if (cls == nullptr) {
    walk_range(1, trie_.num_nodes());
    return;
  }
  // The set after j plain characters: any plain one leads along the chain.
  exact_chain_.assign(1, root);
  for (int32_t j = 1; j <= run; ++j) exact_chain_.push_back(step(exact_chain_.back(), 'a'));
  for (const TokenTrie::NodeId e : cls->exits()) {
    // The set at e's parent: after its whole characters, stepped through a cut one.
    const TokenTrie::NodeId p = trie_.parent(e);
    partial_.clear();
    TokenTrie::NodeId boundary = p;
    if (p != 0) {
      uint8_t utf8 = 0;
      for (TokenTrie::NodeId v = p; v != 0 && trie_.byte(v) >= 0x80; v = trie_.parent(v)) {
        partial_.push_back(trie_.byte(v));
      }
      // partial_: the non-ASCII bytes above e, nearest first; those after the last complete
      // character are the cut one.
      size_t from = partial_.size();
      for (size_t k = partial_.size(); k-- > 0;) {
        utf8 = utf8_next_state(utf8, partial_[k]);
        if (utf8 == 0) from = k;
      }
      partial_.resize(from);
      for (size_t k = 0; k < from; ++k) boundary = trie_.parent(boundary);
    }
    const int32_t chars = boundary == 0 ? 0 : trie_.plain_chars_to(boundary);
    if (chars > run) continue;  // past the chain: dead, and no stack popped on the way
    SetId at = exact_chain_[chars];
    for (size_t k = partial_.size(); k-- > 0 && at != StackEngine::kDeadSet;) {
      at = step(at, partial_[k]);
    }
    if (at == StackEngine::kDeadSet) continue;
    const int32_t d = trie_.depth(e);
    if (static_cast<int32_t>(set_at_.size()) < d) {
      set_at_.resize(d);
      crossed_.resize(d);
    }
    set_at_[d - 1] = at;
    crossed_[d - 1] = 0;
    walk_range(e, trie_.subtree_end(e));
  }
}

void PositionWalker::walk_range(TokenTrie::NodeId from, TokenTrie::NodeId stop) {
  const TokenTrie& trie = trie_;
  std::vector<int32_t>& accepted = *accepted_;
  std::vector<TokenTrie::NodeId>& uncertain = *uncertain_;
  const int32_t covered = covered_;
  std::vector<SetId>& set_at = set_at_;
  std::vector<uint8_t>& crossed = crossed_;
  auto add_uncertain_subtree = [&](TokenTrie::NodeId first, TokenTrie::NodeId end) {
    for (TokenTrie::NodeId v = first; v < end; ++v) {
      if (!trie.tokens_at(v).empty()) uncertain.push_back(v);
    }
  };
  TokenTrie::NodeId node = from;
  while (node < stop) {
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
    if (s != set_at[d - 1] && trie.byte(node) < 0x80) {
      // Entering a class loop: its class paths below keep the set, only the exits step.
      const ClassTokenSets* cls = loop_class(s);
      if (cls != nullptr && on_class_path(*cls, node)) {
        // The class tokens below (those in the caller's plain bitmask left out).
        const bool all_plain = covered == kUnboundedRun;
        const auto& inside = all_plain ? cls->inside_not_plain() : cls->inside();
        for (auto it = std::upper_bound(inside.begin(), inside.end(), node);
             it != inside.end() && *it < end; ++it) {
          const int32_t chars = trie.plain_chars_to(*it);
          if (covered > 0 && chars != TokenTrie::kNotPlain && chars <= covered) continue;
          const auto below = trie.tokens_at(*it);
          accepted.insert(accepted.end(), below.begin(), below.end());
        }
        walk_exits(*cls, node, end, s, c ? 1 : 0);
        node = end;
        continue;
      }
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
