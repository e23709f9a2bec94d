// The pushdown automaton's runtime: hash-consed stacks and sets of stacks, stepped a byte at a
// time, with the byte transitions between sets cached (a lazily built DFA over stack sets).
//
// A frame is (automaton state, parent frame): the top of a stack, its parent the frame to
// return into when the rule finishes. Frames are immutable and shared, so a set of stacks is a
// sorted list of frame ids, and a set is hash-consed too: equal sets have equal ids, which is
// what makes the transition cache work (walking the vocabulary trie from the same set hits the
// same cached transitions). After each byte the set is closed: calls push their rule's start,
// finished rules pop to their parent, and only frames that can consume a byte are kept.
//
// Not thread-safe: each matcher owns one engine, and mask precomputation makes its own.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/flat_map.h"

namespace sgl::grammar {

using FrameId = int32_t;
using SetId = int32_t;

inline constexpr FrameId kNoParent = -1;  // the root rule's frame: popping it ends the input
inline constexpr FrameId kBottom = -2;    // a probe's base frame: popping it needs the context

struct Frame {
  StateId state = -1;
  FrameId parent = kNoParent;
};

class StackEngine {
 public:
  static constexpr SetId kDeadSet = 0;  // no frame, no flag: nothing more can be matched

  explicit StackEngine(const GrammarAutomaton& automaton);

  FrameId frame(StateId state, FrameId parent);
  const Frame& frame_at(FrameId id) const { return frames_[id]; }
  int32_t num_frames() const { return static_cast<int32_t>(frames_.size()); }

  // The root rule's start, closed.
  SetId initial_set();
  // {frame} as it is (no closure): a probe from one position. `frame` must consume bytes.
  SetId singleton(FrameId frame);
  // The set after consuming `byte` from `set`, closed; kDeadSet when no stack accepts it.
  SetId step(SetId set, uint8_t byte);

  std::span<const FrameId> frames(SetId set) const {
    const SetInfo& info = sets_[set];
    return {pool_.data() + info.offset, pool_.data() + info.offset + info.count};
  }
  // The input may end here (the root rule finished on some stack).
  bool can_accept(SetId set) const { return (sets_[set].flags & kAcceptFlag) != 0; }
  // Some stack popped below a probe's base frame (see kBottom) in the last closure.
  bool reached_bottom(SetId set) const { return (sets_[set].flags & kBottomFlag) != 0; }
  int32_t num_sets() const { return static_cast<int32_t>(sets_.size()); }

  // Drops every frame and set not reachable from `roots` (which are renumbered in place) and
  // the transition cache. Bounds the memory of a long generation.
  void compact(std::vector<SetId>& roots);

 private:
  static constexpr uint8_t kAcceptFlag = 1;
  static constexpr uint8_t kBottomFlag = 2;
  struct SetInfo {
    int32_t offset = 0;
    int32_t count = 0;
    uint8_t flags = 0;
  };

  // `s` only ends its rule (final, no edge): returning into it is returning to its parent.
  bool tail_state(StateId s) const;
  SetId close(uint8_t flags);  // closes seeds_ into a set
  SetId intern(const std::vector<FrameId>& frames, uint8_t flags);
  void visit(FrameId f);

  const GrammarAutomaton& automaton_;
  std::vector<Frame> frames_;
  FlatMap64 frame_ids_;
  std::vector<FrameId> pool_;
  std::vector<SetInfo> sets_;
  std::vector<SetId> same_hash_next_;  // chains sets whose content hashes collide
  FlatMap64 set_ids_;
  FlatMap64 transitions_;
  // Closure scratch.
  std::vector<FrameId> seeds_;
  std::vector<FrameId> work_;
  std::vector<FrameId> out_;
  std::vector<uint32_t> seen_;
  uint32_t epoch_ = 0;
  uint8_t flags_ = 0;
};

}  // namespace sgl::grammar
