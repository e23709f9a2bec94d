// Plain-character runs per automaton state, from the byte edges.
#include "grammar/plain_runs.h"

#include <algorithm>
#include <bitset>
#include <unordered_map>

#include "grammar/utf8.h"

namespace sgl::grammar {
namespace {

// The UTF-8 byte classes as ranges: the lead bytes by the state they lead to, and per state
// inside a character the range of valid next bytes (each range leads to one state).
struct Utf8Ranges {
  struct Range {
    int lo = 0;
    int hi = -1;
    uint8_t next = kUtf8Invalid;
  };
  std::vector<Range> leads;
  Range continuation[kUtf8States];

  Utf8Ranges() {
    for (int b = 0x80; b < 0x100; ++b) {
      const uint8_t u = utf8_next_state(0, static_cast<uint8_t>(b));
      if (u == kUtf8Invalid) continue;
      if (leads.empty() || leads.back().next != u || leads.back().hi != b - 1) {
        leads.push_back(Range{b, b, u});
      }
      leads.back().hi = b;
    }
    for (uint8_t u = 1; u < kUtf8States; ++u) {
      for (int b = 0x80; b < 0xC0; ++b) {
        const uint8_t next = utf8_next_state(u, static_cast<uint8_t>(b));
        if (next == kUtf8Invalid) continue;
        Range& r = continuation[u];
        if (r.hi < r.lo) r.lo = b;
        r.hi = b;
        r.next = next;
      }
    }
  }
};

// [lo, hi] holds a plain ASCII byte.
bool has_plain_ascii(int lo, int hi) {
  lo = std::max(lo, 0x20);
  hi = std::min(hi, 0x7E);
  return lo <= hi && !(lo == hi && (lo == '"' || lo == '\\'));
}

uint64_t memo_key(StateId at, uint8_t utf8, StateId target) {
  return static_cast<uint64_t>(at) | static_cast<uint64_t>(target) << 21 |
         static_cast<uint64_t>(utf8) << 42;
}

// The state every plain character leads to from a state, when there is one.
class SuccessorFinder {
 public:
  SuccessorFinder(const GrammarAutomaton& automaton, const Utf8Ranges& utf8)
      : a_(automaton), utf8_(utf8) {}

  // A state T such that every plain character has a path of `state`'s edges (and of the
  // intermediate states of a multibyte character) to T; -1 if none is found.
  StateId successor(StateId state) {
    for (const ByteEdge& e : a_.byte_edges(state)) {
      if (e.lo <= 'a' && 'a' <= e.hi && leads_to(state, e.target)) return e.target;
    }
    return -1;
  }

 private:
  bool leads_to(StateId state, StateId target) {
    std::bitset<256> ok;
    const auto edges = a_.byte_edges(state);
    for (const ByteEdge& e : edges) {
      if (e.target == target) set(ok, e.lo, std::min<int>(e.hi, 0x7F));
    }
    for (int b = 0x20; b < 0x7F; ++b) {
      if (!ok[b] && has_plain_ascii(b, b)) return false;
    }
    for (const ByteEdge& e : edges) {
      for (const Utf8Ranges::Range& lead : utf8_.leads) {
        const int lo = std::max<int>(e.lo, lead.lo), hi = std::min<int>(e.hi, lead.hi);
        if (lo <= hi && completes(e.target, lead.next, target)) set(ok, lo, hi);
      }
    }
    for (const Utf8Ranges::Range& lead : utf8_.leads) {
      for (int b = lead.lo; b <= lead.hi; ++b) {
        if (!ok[b]) return false;
      }
    }
    return true;
  }

  static void set(std::bitset<256>& bits, int lo, int hi) {
    for (int b = lo; b <= hi; ++b) bits.set(b);
  }

  // From `at`, inside a character (UTF-8 state `utf8`), every valid continuation completes
  // it at `target`.
  bool completes(StateId at, uint8_t utf8, StateId target) {
    const uint64_t key = memo_key(at, utf8, target);
    const auto found = memo_.find(key);
    if (found != memo_.end()) return found->second;
    const Utf8Ranges::Range& r = utf8_.continuation[utf8];
    std::bitset<256> ok;
    for (const ByteEdge& e : a_.byte_edges(at)) {
      const int lo = std::max<int>(e.lo, r.lo), hi = std::min<int>(e.hi, r.hi);
      if (lo > hi) continue;
      if (r.next == 0 ? e.target == target : completes(e.target, r.next, target)) {
        set(ok, lo, hi);
      }
    }
    bool all = true;
    for (int b = r.lo; b <= r.hi; ++b) all = all && ok[b];
    memo_.emplace(key, all);
    return all;
  }

  const GrammarAutomaton& a_;
  const Utf8Ranges& utf8_;
  std::unordered_map<uint64_t, bool> memo_;
};

// Whether a frame's plain characters are forced: each plain byte (and each byte of a multibyte
// character) has only edges to one state, which neither calls nor finishes its rule, so the
// stack set stays that single frame, never pops, and dies where the edges end.
class ExactChecker {
 public:
  ExactChecker(const GrammarAutomaton& automaton, const Utf8Ranges& utf8)
      : a_(automaton), utf8_(utf8) {}

  bool isolated(StateId s) const { return !a_.is_final(s) && a_.call_edges(s).empty(); }

  // No edge of `state` takes a plain byte or a multibyte lead.
  bool takes_no_plain(StateId state) const {
    for (const ByteEdge& e : a_.byte_edges(state)) {
      if ((e.hi >= 0xC2 && e.lo <= 0xF4) || has_plain_ascii(e.lo, e.hi)) return false;
    }
    return true;
  }

  // Every edge of `state` on a plain byte goes to `target`, and every multibyte character
  // it starts reaches `target` alone.
  bool only_to(StateId state, StateId target) {
    for (const ByteEdge& e : a_.byte_edges(state)) {
      if (e.target != target && has_plain_ascii(e.lo, e.hi)) return false;
    }
    return multibyte_only_to(state, target);
  }
  // Every multibyte character `state` starts reaches `target` alone.
  bool multibyte_only_to(StateId state, StateId target) {
    for (const ByteEdge& e : a_.byte_edges(state)) {
      for (const Utf8Ranges::Range& lead : utf8_.leads) {
        if (std::max<int>(e.lo, lead.lo) <= std::min<int>(e.hi, lead.hi) &&
            !forced(e.target, lead.next, target)) {
          return false;
        }
      }
    }
    return true;
  }

 private:
  // Inside a character (UTF-8 state `utf8`) at `at`: isolated, and every valid continuation
  // goes only to the next isolated state, ending at `target`.
  bool forced(StateId at, uint8_t utf8, StateId target) {
    const uint64_t key = memo_key(at, utf8, target);
    const auto found = memo_.find(key);
    if (found != memo_.end()) return found->second;
    const Utf8Ranges::Range& r = utf8_.continuation[utf8];
    bool ok = isolated(at);
    for (const ByteEdge& e : a_.byte_edges(at)) {
      if (!ok) break;
      if (std::max<int>(e.lo, r.lo) > std::min<int>(e.hi, r.hi)) continue;
      ok = r.next == 0 ? e.target == target : forced(e.target, r.next, target);
    }
    memo_.emplace(key, ok);
    return ok;
  }

  const GrammarAutomaton& a_;
  const Utf8Ranges& utf8_;
  std::unordered_map<uint64_t, bool> memo_;
};

}  // namespace

PlainRuns::PlainRuns(const GrammarAutomaton& automaton) {
  const int32_t n = automaton.num_states();
  const Utf8Ranges utf8;
  SuccessorFinder finder(automaton, utf8);
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
  ExactChecker checker(automaton, utf8);
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
  // Loops: a successor of its own (so every multibyte character completes back to the state)
  // whose multibyte characters are forced.
  multibyte_loop_.assign(n, 0);
  for (StateId s = 0; s < n; ++s) {
    multibyte_loop_[s] =
        successor[s] == s && checker.isolated(s) && checker.multibyte_only_to(s, s);
  }
}

}  // namespace sgl::grammar
