// Plain-character runs per automaton state, from the byte edges.
#include "grammar/plain_runs.h"

#include <algorithm>
#include <unordered_map>

#include "grammar/utf8.h"

namespace sgl::grammar {
namespace {

bool plain_ascii(int b) { return b >= 0x20 && b < 0x7F && b != '"' && b != '\\'; }
bool covers(const ByteEdge& e, int b) { return b >= e.lo && b <= e.hi; }

// The state every plain character leads to from a state, when there is one.
class SuccessorFinder {
 public:
  explicit SuccessorFinder(const GrammarAutomaton& automaton) : a_(automaton) {}

  // A state T such that every plain character has a path of `state`'s edges (and of the
  // intermediate states of a multibyte character) to T; -1 if none is found.
  StateId successor(StateId state) {
    const auto edges = a_.byte_edges(state);
    for (const ByteEdge& e : edges) {
      if (covers(e, 'a') && leads_to(state, e.target)) return e.target;
    }
    return -1;
  }

 private:
  bool leads_to(StateId state, StateId target) {
    const auto edges = a_.byte_edges(state);
    for (int b = 0x20; b < 0x7F; ++b) {
      if (!plain_ascii(b)) continue;
      const bool ok = std::any_of(edges.begin(), edges.end(), [&](const ByteEdge& e) {
        return covers(e, b) && e.target == target;
      });
      if (!ok) return false;
    }
    for (int b = 0xC2; b <= 0xF4; ++b) {
      if (!completes_any(edges, static_cast<uint8_t>(b), 0, target)) return false;
    }
    return true;
  }

  // Some edge takes `byte` (UTF-8 state `utf8` before it) on a path that completes the
  // character at `target`.
  bool completes_any(std::span<const ByteEdge> edges, uint8_t byte, uint8_t utf8, StateId target) {
    const uint8_t next = utf8_next_state(utf8, byte);
    for (const ByteEdge& e : edges) {
      if (!covers(e, byte)) continue;
      if (next == 0 ? e.target == target : completes(e.target, next, target)) return true;
    }
    return false;
  }

  // From `at`, inside a character (UTF-8 state `utf8`), every valid continuation completes
  // it at `target`.
  bool completes(StateId at, uint8_t utf8, StateId target) {
    const uint64_t key = static_cast<uint64_t>(at) | static_cast<uint64_t>(target) << 21 |
                         static_cast<uint64_t>(utf8) << 42;
    const auto found = memo_.find(key);
    if (found != memo_.end()) return found->second;
    bool ok = true;
    for (int b = 0x80; b < 0xC0 && ok; ++b) {
      if (utf8_next_state(utf8, static_cast<uint8_t>(b)) == kUtf8Invalid) continue;
      ok = completes_any(a_.byte_edges(at), static_cast<uint8_t>(b), utf8, target);
    }
    memo_.emplace(key, ok);
    return ok;
  }

  const GrammarAutomaton& a_;
  std::unordered_map<uint64_t, bool> memo_;
};

// Whether a frame's plain characters are forced: each plain byte (and each byte of a multibyte
// character) has only edges to one state, which neither calls nor finishes its rule, so the
// stack set stays that single frame, never pops, and dies where the edges end.
class ExactChecker {
 public:
  explicit ExactChecker(const GrammarAutomaton& automaton) : a_(automaton) {}

  bool isolated(StateId s) const { return !a_.is_final(s) && a_.call_edges(s).empty(); }

  // No edge of `state` takes a plain byte or a multibyte lead.
  bool takes_no_plain(StateId state) const {
    for (const ByteEdge& e : a_.byte_edges(state)) {
      if (e.hi >= 0xC2 && e.lo <= 0xF4) return false;
      for (int b = std::max<int>(e.lo, 0x20); b <= std::min<int>(e.hi, 0x7E); ++b) {
        if (plain_ascii(b)) return false;
      }
    }
    return true;
  }

  // Every edge of `state` on a plain byte goes to `target`, and every multibyte character
  // it starts reaches `target` alone.
  bool only_to(StateId state, StateId target) {
    for (const ByteEdge& e : a_.byte_edges(state)) {
      for (int b = std::max<int>(e.lo, 0x20); b <= std::min<int>(e.hi, 0x7E); ++b) {
        if (plain_ascii(b) && e.target != target) return false;
      }
      for (int b = std::max<int>(e.lo, 0xC2); b <= std::min<int>(e.hi, 0xF4); ++b) {
        if (!forced(e.target, utf8_next_state(0, static_cast<uint8_t>(b)), target)) return false;
      }
    }
    return true;
  }

 private:
  // Inside a character (UTF-8 state `utf8`) at `at`: isolated, and every valid continuation
  // goes only to the next isolated state, ending at `target`.
  bool forced(StateId at, uint8_t utf8, StateId target) {
    const uint64_t key = static_cast<uint64_t>(at) | static_cast<uint64_t>(target) << 21 |
                         static_cast<uint64_t>(utf8) << 42;
    const auto found = memo_.find(key);
    if (found != memo_.end()) return found->second;
    bool ok = isolated(at);
    for (const ByteEdge& e : a_.byte_edges(at)) {
      for (int b = std::max<int>(e.lo, 0x80); ok && b <= std::min<int>(e.hi, 0xBF); ++b) {
        const uint8_t next = utf8_next_state(utf8, static_cast<uint8_t>(b));
        if (next == kUtf8Invalid) continue;
        ok = next == 0 ? e.target == target : forced(e.target, next, target);
      }
    }
    memo_.emplace(key, ok);
    return ok;
  }

  const GrammarAutomaton& a_;
  std::unordered_map<uint64_t, bool> memo_;
};

}  // namespace

PlainRuns::PlainRuns(const GrammarAutomaton& automaton) {
  const int32_t n = automaton.num_states();
  SuccessorFinder finder(automaton);
  constexpr int32_t kUnknown = -1, kOnChain = -2;
  runs_.assign(n, kUnknown);
  std::vector<StateId> successor(n, -1);
  std::vector<StateId> chain;
  for (StateId first = 0; first < n; ++first) {
    if (runs_[first] != kUnknown) continue;
    // Follow the successors to a known run, a state without one (its run is 0) or a cycle
    // (every plain string fits: unbounded), then fill the chain in backwards.
    chain.clear();
    int32_t run = -1;  // -1: chain.back() has no successor
    for (StateId s = first;;) {
      if (runs_[s] == kOnChain) {
        run = kUnbounded;
        break;
      }
      if (runs_[s] >= 0) {
        run = runs_[s];
        break;
      }
      runs_[s] = kOnChain;
      chain.push_back(s);
      const StateId next = automaton.byte_edges(s).empty() ? -1 : finder.successor(s);
      if (next < 0 || automaton.byte_edges(next).empty()) break;
      successor[s] = next;
      s = next;
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      run = run == kUnbounded ? kUnbounded : std::min(run + 1, kUnbounded - 1);
      runs_[*it] = run;
    }
  }
  // Exact: along the successors (finite runs, so no cycle), from the chain's end backwards.
  ExactChecker checker(automaton);
  exact_.assign(n, kUnknown);
  for (StateId first = 0; first < n; ++first) {
    if (runs_[first] == kUnbounded) exact_[first] = 0;
    if (exact_[first] != kUnknown) continue;
    chain.clear();
    for (StateId s = first; s >= 0 && exact_[s] == kUnknown; s = successor[s]) chain.push_back(s);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const StateId s = *it;
      const StateId next = successor[s];
      bool ok = checker.isolated(s);
      if (ok && runs_[s] == 0) {
        ok = checker.takes_no_plain(s);
      } else if (ok) {
        ok = next >= 0 && exact_[next] == 1 && checker.only_to(s, next);
      }
      exact_[s] = ok ? 1 : 0;
    }
  }
}

}  // namespace sgl::grammar
