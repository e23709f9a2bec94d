// Grammar IR -> per-rule epsilon-free NFAs (Thompson construction, epsilon elimination), then
// the whole-grammar checks: productive rules and trimming, nullable rules, left recursion.
#include "grammar/automaton.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "grammar/utf8.h"

namespace sgl::grammar {
namespace {

constexpr int kMaxExprDepth = 1024;

// One rule's NFA with local state ids; state 0 is the start.
struct RuleNfa {
  std::vector<uint8_t> final;
  std::vector<std::vector<ByteEdge>> bytes;
  std::vector<std::vector<CallEdge>> calls;
  int32_t size() const { return static_cast<int32_t>(final.size()); }
};

bool edge_less(const ByteEdge& a, const ByteEdge& b) {
  return std::tie(a.target, a.lo, a.hi) < std::tie(b.target, b.lo, b.hi);
}

}  // namespace

class AutomatonBuilder {
 public:
  explicit AutomatonBuilder(const Grammar& g) : g_(g) {}

  Result<GrammarAutomaton> build() {
    if (g_.root() < 0 || g_.root() >= g_.num_rules()) {
      return invalid_argument("grammar: no root rule");
    }
    const int32_t n = g_.num_rules();
    nfas_.resize(n);
    built_.assign(n, 0);
    find_inlinable_rules();
    // Build the rules reachable from the root (unused rules are allowed and ignored).
    std::vector<RuleId> queue = {g_.root()};
    built_[g_.root()] = 1;
    for (size_t i = 0; i < queue.size(); ++i) {
      const RuleId r = queue[i];
      if (g_.rule(r).body < 0) {
        return invalid_argument("grammar: rule '" + g_.rule(r).name + "' has no definition");
      }
      SGL_ASSIGN_OR_RETURN(nfas_[r], build_rule(r));
      for (const auto& calls : nfas_[r].calls) {
        for (const CallEdge& c : calls) {
          if (!built_[c.rule]) {
            built_[c.rule] = 1;
            queue.push_back(c.rule);
          }
        }
      }
    }
    trim();
    if (!productive_[g_.root()]) {
      return invalid_argument("grammar: the root rule '" + g_.rule(g_.root()).name +
                              "' accepts no string (every path recurses forever or needs an "
                              "empty character class)");
    }
    SGL_RETURN_IF_ERROR(check_left_recursion());
    return emit();
  }

 private:
  struct NState {
    std::vector<int32_t> eps;
    std::vector<ByteEdge> bytes;
    std::vector<CallEdge> calls;
  };
  struct Frag {
    int32_t start = 0;
    int32_t end = 0;
  };

  Result<int32_t> new_state() {
    if (++total_states_ > kMaxAutomatonStates) {
      return resource_exhausted("grammar: too large (more than " +
                                std::to_string(kMaxAutomatonStates) +
                                " automaton states; large repetition bounds multiply the size)");
    }
    n_.emplace_back();
    return static_cast<int32_t>(n_.size() - 1);
  }

  Result<Frag> build_expr(ExprId id, int depth) {
    if (depth > kMaxExprDepth) return invalid_argument("grammar: expression nesting too deep");
    const Expr& e = g_.expr(id);
    SGL_ASSIGN_OR_RETURN(int32_t start, new_state());
    switch (e.kind) {
      case ExprKind::kBytes: {
        int32_t cur = start;
        for (unsigned char c : e.bytes) {
          SGL_ASSIGN_OR_RETURN(int32_t next, new_state());
          n_[cur].bytes.push_back({c, c, next});
          cur = next;
        }
        return Frag{start, cur};
      }
      case ExprKind::kCharClass: {
        SGL_ASSIGN_OR_RETURN(int32_t end, new_state());
        auto seqs = utf8_sequences(normalize_ranges(e.ranges, e.negated));
        // Sequences sharing leading byte ranges share states (a small trie), which keeps the
        // runtime's state sets small.
        std::vector<std::pair<std::vector<ByteRange>, int32_t>> prefixes;  // prefix -> state
        for (const auto& seq : seqs) {
          int32_t cur = start;
          for (size_t i = 0; i < seq.size(); ++i) {
            if (i + 1 == seq.size()) {
              n_[cur].bytes.push_back({seq[i].lo, seq[i].hi, end});
              break;
            }
            std::vector<ByteRange> prefix(seq.begin(), seq.begin() + i + 1);
            int32_t next = -1;
            for (const auto& [p, s] : prefixes) {
              if (p.size() == prefix.size() &&
                  std::equal(p.begin(), p.end(), prefix.begin(), [](ByteRange a, ByteRange b) {
                    return a.lo == b.lo && a.hi == b.hi;
                  })) {
                next = s;
                break;
              }
            }
            if (next < 0) {
              SGL_ASSIGN_OR_RETURN(next, new_state());
              n_[cur].bytes.push_back({seq[i].lo, seq[i].hi, next});
              prefixes.emplace_back(std::move(prefix), next);
            }
            cur = next;
          }
        }
        return Frag{start, end};
      }
      case ExprKind::kSequence: {
        int32_t cur = start;
        for (ExprId child : e.children) {
          SGL_ASSIGN_OR_RETURN(Frag f, build_expr(child, depth + 1));
          n_[cur].eps.push_back(f.start);
          cur = f.end;
        }
        return Frag{start, cur};
      }
      case ExprKind::kChoice: {
        SGL_ASSIGN_OR_RETURN(int32_t end, new_state());
        for (ExprId child : e.children) {
          SGL_ASSIGN_OR_RETURN(Frag f, build_expr(child, depth + 1));
          n_[start].eps.push_back(f.start);
          n_[f.end].eps.push_back(end);
        }
        return Frag{start, end};
      }
      case ExprKind::kRuleRef: {
        if (inlinable_[e.rule]) {
          SGL_ASSIGN_OR_RETURN(Frag f, build_expr(g_.rule(e.rule).body, depth + 1));
          n_[start].eps.push_back(f.start);
          return Frag{start, f.end};
        }
        SGL_ASSIGN_OR_RETURN(int32_t end, new_state());
        n_[start].calls.push_back({e.rule, end});
        return Frag{start, end};
      }
      case ExprKind::kRepeat: {
        // min copies, then either a loop (unbounded) or max - min copies each of which may be
        // skipped straight to the end (flat, so epsilon closures stay short).
        SGL_ASSIGN_OR_RETURN(int32_t end, new_state());
        int32_t cur = start;
        for (int32_t i = 0; i < e.min; ++i) {
          SGL_ASSIGN_OR_RETURN(Frag f, build_expr(e.children[0], depth + 1));
          n_[cur].eps.push_back(f.start);
          cur = f.end;
        }
        if (e.max == kUnbounded) {
          SGL_ASSIGN_OR_RETURN(Frag f, build_expr(e.children[0], depth + 1));
          n_[cur].eps.push_back(f.start);
          n_[f.end].eps.push_back(cur);
          n_[cur].eps.push_back(end);
        } else {
          for (int32_t i = e.min; i < e.max; ++i) {
            SGL_ASSIGN_OR_RETURN(Frag f, build_expr(e.children[0], depth + 1));
            n_[cur].eps.push_back(f.start);
            n_[cur].eps.push_back(end);
            cur = f.end;
          }
          n_[cur].eps.push_back(end);
        }
        return Frag{start, end};
      }
    }
    return internal_error("grammar: unknown expression kind");
  }

  // Small rules that call no rule (a JSON string's character, a number) are built into their
  // callers: a token then runs through them without crossing a rule boundary, so the callers'
  // positions classify it without the stack (a string's body is one rule, not a call per
  // character).
  void find_inlinable_rules() {
    constexpr int32_t kMaxInlineNodes = 64;
    inlinable_.assign(g_.num_rules(), 0);
    for (RuleId r = 0; r < g_.num_rules(); ++r) {
      if (r == g_.root() || g_.rule(r).body < 0) continue;
      int32_t nodes = 0;
      bool leaf = true;
      std::vector<ExprId> stack = {g_.rule(r).body};
      while (!stack.empty() && leaf && nodes <= kMaxInlineNodes) {
        const Expr& e = g_.expr(stack.back());
        stack.pop_back();
        ++nodes;
        if (e.kind == ExprKind::kRuleRef) leaf = false;
        // A repetition's copies count: {0,1000} of a class is no small rule.
        if (e.kind == ExprKind::kRepeat) nodes += e.max == kUnbounded ? e.min : e.max;
        stack.insert(stack.end(), e.children.begin(), e.children.end());
      }
      inlinable_[r] = leaf && nodes <= kMaxInlineNodes;
    }
  }

  // Thompson NFA of the rule, then epsilon elimination: the kept states are the start and every
  // edge target; each takes the edges and finality of its epsilon closure.
  Result<RuleNfa> build_rule(RuleId r) {
    n_.clear();
    SGL_ASSIGN_OR_RETURN(Frag f, build_expr(g_.rule(r).body, 0));
    const int32_t size = static_cast<int32_t>(n_.size());
    std::vector<int32_t> keep(size, -1);
    std::vector<int32_t> order;
    auto mark = [&](int32_t s) {
      if (keep[s] < 0) {
        keep[s] = static_cast<int32_t>(order.size());
        order.push_back(s);
      }
    };
    mark(f.start);
    for (const NState& s : n_) {
      for (const ByteEdge& b : s.bytes) mark(b.target);
      for (const CallEdge& c : s.calls) mark(c.target);
    }
    RuleNfa out;
    out.final.assign(order.size(), 0);
    out.bytes.resize(order.size());
    out.calls.resize(order.size());
    std::vector<int32_t> stamp(size, -1);
    std::vector<int32_t> stack;
    for (size_t k = 0; k < order.size(); ++k) {
      stack = {order[k]};
      stamp[order[k]] = static_cast<int32_t>(k);
      while (!stack.empty()) {
        const int32_t s = stack.back();
        stack.pop_back();
        if (++closure_work_ > kMaxClosureWork) {
          return resource_exhausted(
              "grammar: too large (a repetition of something that may be empty, such as "
              "(a?){0,N}, connects every copy to every later one; use a smaller bound)");
        }
        if (s == f.end) out.final[k] = 1;
        for (const ByteEdge& b : n_[s].bytes) out.bytes[k].push_back({b.lo, b.hi, keep[b.target]});
        for (const CallEdge& c : n_[s].calls) out.calls[k].push_back({c.rule, keep[c.target]});
        for (int32_t t : n_[s].eps) {
          if (stamp[t] != static_cast<int32_t>(k)) {
            stamp[t] = static_cast<int32_t>(k);
            stack.push_back(t);
          }
        }
      }
      auto& bytes = out.bytes[k];
      std::sort(bytes.begin(), bytes.end(), edge_less);
      bytes.erase(std::unique(bytes.begin(), bytes.end(),
                              [](const ByteEdge& a, const ByteEdge& b) {
                                return a.lo == b.lo && a.hi == b.hi && a.target == b.target;
                              }),
                  bytes.end());
      auto& calls = out.calls[k];
      std::sort(calls.begin(), calls.end(), [](const CallEdge& a, const CallEdge& b) {
        return std::tie(a.rule, a.target) < std::tie(b.rule, b.target);
      });
      calls.erase(std::unique(calls.begin(), calls.end(),
                              [](const CallEdge& a, const CallEdge& b) {
                                return a.rule == b.rule && a.target == b.target;
                              }),
                  calls.end());
    }
    return out;
  }

  // States that can reach a final state (through calls of productive rules only).
  std::vector<uint8_t> live_states(const RuleNfa& nfa) const {
    const int32_t n = nfa.size();
    std::vector<std::vector<int32_t>> preds(n);
    for (int32_t s = 0; s < n; ++s) {
      for (const ByteEdge& b : nfa.bytes[s]) preds[b.target].push_back(s);
      for (const CallEdge& c : nfa.calls[s]) {
        if (productive_[c.rule]) preds[c.target].push_back(s);
      }
    }
    std::vector<uint8_t> live(n, 0);
    std::vector<int32_t> stack;
    for (int32_t s = 0; s < n; ++s) {
      if (nfa.final[s]) {
        live[s] = 1;
        stack.push_back(s);
      }
    }
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      for (int32_t p : preds[s]) {
        if (!live[p]) {
          live[p] = 1;
          stack.push_back(p);
        }
      }
    }
    return live;
  }

  // Productive rules by fixpoint; then every edge into a dead state or to an unproductive rule
  // is dropped, and unreachable states removed.
  void trim() {
    const int32_t n = g_.num_rules();
    productive_.assign(n, 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (RuleId r = 0; r < n; ++r) {
        if (!built_[r] || productive_[r]) continue;
        if (live_states(nfas_[r])[0]) {
          productive_[r] = 1;
          changed = true;
        }
      }
    }
    for (RuleId r = 0; r < n; ++r) {
      if (!built_[r]) continue;
      RuleNfa& nfa = nfas_[r];
      if (!productive_[r]) {
        nfa = RuleNfa{};
        continue;
      }
      const std::vector<uint8_t> live = live_states(nfa);
      // Forward reachability over the surviving edges, renumbering as we go (start stays 0).
      std::vector<int32_t> id(nfa.size(), -1);
      std::vector<int32_t> order = {0};
      id[0] = 0;
      for (size_t i = 0; i < order.size(); ++i) {
        const int32_t s = order[i];
        auto visit = [&](int32_t t) {
          if (id[t] < 0) {
            id[t] = static_cast<int32_t>(order.size());
            order.push_back(t);
          }
        };
        for (const ByteEdge& b : nfa.bytes[s]) {
          if (live[b.target]) visit(b.target);
        }
        for (const CallEdge& c : nfa.calls[s]) {
          if (live[c.target] && productive_[c.rule]) visit(c.target);
        }
      }
      RuleNfa out;
      out.final.resize(order.size());
      out.bytes.resize(order.size());
      out.calls.resize(order.size());
      for (size_t i = 0; i < order.size(); ++i) {
        const int32_t s = order[i];
        out.final[i] = nfa.final[s];
        for (const ByteEdge& b : nfa.bytes[s]) {
          if (live[b.target]) out.bytes[i].push_back({b.lo, b.hi, id[b.target]});
        }
        for (const CallEdge& c : nfa.calls[s]) {
          if (live[c.target] && productive_[c.rule]) out.calls[i].push_back({c.rule, id[c.target]});
        }
      }
      nfa = std::move(out);
    }
  }

  Status check_left_recursion() {
    const int32_t n = g_.num_rules();
    // nullable: the rule's start reaches a final state through calls of nullable rules only.
    nullable_.assign(n, 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (RuleId r = 0; r < n; ++r) {
        if (!productive_[r] || nullable_[r]) continue;
        bool found = false;
        for_each_unconsumed_state(r, [&](int32_t s) { found = found || nfas_[r].final[s]; });
        if (found) {
          nullable_[r] = 1;
          changed = true;
        }
      }
    }
    // r -> q when q may be called before r consumes a byte; a cycle is left recursion.
    std::vector<std::vector<RuleId>> left_calls(n);
    for (RuleId r = 0; r < n; ++r) {
      if (!productive_[r]) continue;
      for_each_unconsumed_state(r, [&](int32_t s) {
        for (const CallEdge& c : nfas_[r].calls[s]) left_calls[r].push_back(c.rule);
      });
    }
    std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the DFS path, 2 done
    std::vector<RuleId> path;
    std::function<Status(RuleId)> dfs = [&](RuleId r) -> Status {
      color[r] = 1;
      path.push_back(r);
      for (RuleId q : left_calls[r]) {
        if (color[q] == 1) {
          std::string cycle;
          auto it = std::find(path.begin(), path.end(), q);
          for (; it != path.end(); ++it) cycle += g_.rule(*it).name + " -> ";
          cycle += g_.rule(q).name;
          return invalid_argument("grammar: left recursion is not supported: " + cycle +
                                  " (a rule reaches itself before consuming any input)");
        }
        if (color[q] == 0) SGL_RETURN_IF_ERROR(dfs(q));
      }
      path.pop_back();
      color[r] = 2;
      return Status::ok_status();
    };
    for (RuleId r = 0; r < n; ++r) {
      if (productive_[r] && color[r] == 0) SGL_RETURN_IF_ERROR(dfs(r));
    }
    return Status::ok_status();
  }

  // Calls fn(s) for each state of rule r reachable from its start without consuming a byte.
  template <typename Fn>
  void for_each_unconsumed_state(RuleId r, Fn&& fn) const {
    const RuleNfa& nfa = nfas_[r];
    std::vector<uint8_t> seen(nfa.size(), 0);
    std::vector<int32_t> stack = {0};
    seen[0] = 1;
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      fn(s);
      for (const CallEdge& c : nfa.calls[s]) {
        if (nullable_[c.rule] && !seen[c.target]) {
          seen[c.target] = 1;
          stack.push_back(c.target);
        }
      }
    }
  }

  GrammarAutomaton emit() {
    GrammarAutomaton a;
    const int32_t n = g_.num_rules();
    a.root_ = g_.root();
    a.rule_start_.assign(n, -1);
    a.rule_names_.resize(n);
    // Only rules still reachable from the root after trimming.
    std::vector<uint8_t> reachable(n, 0);
    std::vector<RuleId> queue = {g_.root()};
    reachable[g_.root()] = 1;
    for (size_t i = 0; i < queue.size(); ++i) {
      for (const auto& calls : nfas_[queue[i]].calls) {
        for (const CallEdge& c : calls) {
          if (!reachable[c.rule]) {
            reachable[c.rule] = 1;
            queue.push_back(c.rule);
          }
        }
      }
    }
    std::vector<int32_t> base(n, 0);
    int32_t total = 0;
    for (RuleId r = 0; r < n; ++r) {
      a.rule_names_[r] = g_.rule(r).name;
      if (!reachable[r]) continue;
      base[r] = total;
      a.rule_start_[r] = total;
      total += nfas_[r].size();
    }
    a.byte_offset_.push_back(0);
    a.call_offset_.push_back(0);
    for (RuleId r = 0; r < n; ++r) {
      if (!reachable[r]) continue;
      const RuleNfa& nfa = nfas_[r];
      for (int32_t s = 0; s < nfa.size(); ++s) {
        a.state_rule_.push_back(r);
        a.final_.push_back(nfa.final[s]);
        for (const ByteEdge& b : nfa.bytes[s])
          a.byte_edges_.push_back({b.lo, b.hi, base[r] + b.target});
        for (const CallEdge& c : nfa.calls[s])
          a.call_edges_.push_back({c.rule, base[r] + c.target});
        a.byte_offset_.push_back(static_cast<int32_t>(a.byte_edges_.size()));
        a.call_offset_.push_back(static_cast<int32_t>(a.call_edges_.size()));
      }
    }
    return a;
  }

  const Grammar& g_;
  std::vector<NState> n_;
  int64_t total_states_ = 0;
  int64_t closure_work_ = 0;  // states visited by every rule's epsilon closures
  std::vector<RuleNfa> nfas_;
  std::vector<uint8_t> built_;
  std::vector<uint8_t> inlinable_;
  std::vector<uint8_t> productive_;
  std::vector<uint8_t> nullable_;
};

Result<GrammarAutomaton> build_automaton(const Grammar& grammar) {
  return AutomatonBuilder(grammar).build();
}

std::string GrammarAutomaton::debug_string() const {
  std::string out;
  char buf[64];
  for (StateId s = 0; s < num_states(); ++s) {
    out +=
        std::to_string(s) + " [" + rule_names_[state_rule_[s]] + "]" + (final_[s] ? " final" : "");
    for (const ByteEdge& b : byte_edges(s)) {
      std::snprintf(buf, sizeof(buf), " %02X-%02X->%d", b.lo, b.hi, b.target);
      out += buf;
    }
    for (const CallEdge& c : call_edges(s)) {
      out += " call " + rule_names_[c.rule] + "->" + std::to_string(c.target);
    }
    out += "\n";
  }
  return out;
}

}  // namespace sgl::grammar
