// The pushdown automaton's runtime: hash-consed stacks and stack sets, byte steps, closure.
#include "grammar/stack_engine.h"

#include <algorithm>

namespace sgl::grammar {
namespace {

uint64_t frame_key(StateId state, FrameId parent) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(state)) << 32) |
         static_cast<uint32_t>(parent + 2);
}

uint64_t hash_set(const std::vector<FrameId>& frames, uint8_t flags) {
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ flags;
  for (FrameId f : frames) h = (h ^ static_cast<uint32_t>(f)) * 0x100000001B3ULL + (h >> 29);
  return h;
}

}  // namespace

StackEngine::StackEngine(const GrammarAutomaton& automaton) : automaton_(automaton) {
  sets_.push_back(SetInfo{});  // kDeadSet
  same_hash_next_.push_back(-1);
  set_ids_.insert(hash_set({}, 0), kDeadSet);
}

FrameId StackEngine::frame(StateId state, FrameId parent) {
  const uint64_t key = frame_key(state, parent);
  const int32_t found = frame_ids_.find(key);
  if (found >= 0) return found;
  frames_.push_back(Frame{state, parent});
  const auto id = static_cast<FrameId>(frames_.size() - 1);
  frame_ids_.insert(key, id);
  return id;
}

SetId StackEngine::intern(const std::vector<FrameId>& frames, uint8_t flags) {
  const uint64_t h = hash_set(frames, flags);
  for (SetId id = set_ids_.find(h); id >= 0; id = same_hash_next_[id]) {
    const SetInfo& info = sets_[id];
    if (info.flags == flags && info.count == static_cast<int32_t>(frames.size()) &&
        std::equal(frames.begin(), frames.end(), pool_.begin() + info.offset)) {
      return id;
    }
  }
  SetInfo info;
  info.offset = static_cast<int32_t>(pool_.size());
  info.count = static_cast<int32_t>(frames.size());
  info.flags = flags;
  pool_.insert(pool_.end(), frames.begin(), frames.end());
  sets_.push_back(info);
  const auto id = static_cast<SetId>(sets_.size() - 1);
  same_hash_next_.push_back(set_ids_.find(h));
  set_ids_.insert(h, id);
  return id;
}

void StackEngine::visit(FrameId f) {
  if (static_cast<size_t>(f) >= seen_.size()) seen_.resize(frames_.size() * 2 + 16, 0);
  if (seen_[f] == epoch_) return;
  seen_[f] = epoch_;
  work_.push_back(f);
}

bool StackEngine::tail_state(StateId s) const {
  return automaton_.is_final(s) && automaton_.byte_edges(s).empty() &&
         automaton_.call_edges(s).empty();
}

SetId StackEngine::close(uint8_t flags) {
  if (++epoch_ == 0) {  // wrapped: forget every mark
    std::fill(seen_.begin(), seen_.end(), 0);
    epoch_ = 1;
  }
  flags_ = flags;
  out_.clear();
  work_.clear();
  for (FrameId f : seeds_) visit(f);
  while (!work_.empty()) {
    const FrameId f = work_.back();
    work_.pop_back();
    const Frame fr = frames_[f];
    if (!automaton_.byte_edges(fr.state).empty()) out_.push_back(f);
    for (const CallEdge& c : automaton_.call_edges(fr.state)) {
      // A call in tail position (its return state only ends the rule) returns straight to the
      // caller's parent: right recursion (free text around triggered tags) keeps one frame.
      const FrameId ret = tail_state(c.target) ? fr.parent : frame(c.target, fr.parent);
      visit(frame(automaton_.rule_start(c.rule), ret));
    }
    if (automaton_.is_final(fr.state)) {
      if (fr.parent == kNoParent) {
        flags_ |= kAcceptFlag;
      } else if (fr.parent == kBottom) {
        flags_ |= kBottomFlag;
      } else {
        visit(fr.parent);
      }
    }
  }
  std::sort(out_.begin(), out_.end());
  return intern(out_, flags_);
}

SetId StackEngine::initial_set() {
  seeds_ = {frame(automaton_.rule_start(automaton_.root()), kNoParent)};
  return close(0);
}

SetId StackEngine::singleton(FrameId f) { return intern({f}, 0); }

SetId StackEngine::step(SetId set, uint8_t byte) {
  const uint64_t key = (static_cast<uint64_t>(set) << 8) | byte;
  const int32_t cached = transitions_.find(key);
  if (cached >= 0) return cached;
  seeds_.clear();
  const SetInfo info = sets_[set];
  for (int32_t i = 0; i < info.count; ++i) {
    const Frame fr = frames_[pool_[info.offset + i]];
    for (const ByteEdge& e : automaton_.byte_edges(fr.state)) {
      if (byte >= e.lo && byte <= e.hi) seeds_.push_back(frame(e.target, fr.parent));
    }
  }
  const SetId next = seeds_.empty() ? kDeadSet : close(0);
  transitions_.insert(key, next);
  return next;
}

void StackEngine::compact(std::vector<SetId>& roots) {
  // Live frames: those of the root sets and their parent chains, renumbered in first-seen order.
  std::vector<FrameId> new_id(frames_.size(), -1);
  std::vector<Frame> kept;
  std::vector<FrameId> chain;
  auto keep = [&](FrameId f) -> FrameId {
    chain.clear();
    while (f >= 0 && new_id[f] < 0) {
      chain.push_back(f);
      f = frames_[f].parent;
    }
    // Parents first, so each frame's parent already has its new id.
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Frame& old = frames_[*it];
      new_id[*it] = static_cast<FrameId>(kept.size());
      kept.push_back(Frame{old.state, old.parent >= 0 ? new_id[old.parent] : old.parent});
    }
    return chain.empty() ? new_id[f] : new_id[chain.front()];
  };
  std::vector<std::pair<std::vector<FrameId>, uint8_t>> contents;
  for (SetId s : roots) {
    std::vector<FrameId> fs;
    for (FrameId f : frames(s)) fs.push_back(keep(f));
    std::sort(fs.begin(), fs.end());
    contents.emplace_back(std::move(fs), sets_[s].flags);
  }
  frames_ = std::move(kept);
  frame_ids_.clear();
  for (size_t i = 0; i < frames_.size(); ++i) {
    frame_ids_.insert(frame_key(frames_[i].state, frames_[i].parent), static_cast<FrameId>(i));
  }
  pool_.clear();
  sets_.assign(1, SetInfo{});
  same_hash_next_.assign(1, -1);
  set_ids_.clear();
  set_ids_.insert(hash_set({}, 0), kDeadSet);
  transitions_.clear();
  seen_.assign(frames_.size() + 16, 0);
  epoch_ = 0;
  for (size_t i = 0; i < roots.size(); ++i)
    roots[i] = intern(contents[i].first, contents[i].second);
}

}  // namespace sgl::grammar
