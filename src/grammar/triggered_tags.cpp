// The trigger automaton as right-linear rules, and triggered tags built on it.
#include "grammar/triggered_tags.h"

#include <algorithm>
#include <functional>

#include "grammar/utf8.h"

namespace sgl::grammar {
namespace {

using CodePoints = std::vector<uint32_t>;

Result<CodePoints> decode(const std::string& text) {
  CodePoints out;
  for (size_t pos = 0; pos < text.size();) {
    const int32_t cp = decode_utf8(text, pos);
    if (cp < 0) return invalid_argument("trigger '" + text + "' is not valid UTF-8");
    out.push_back(static_cast<uint32_t>(cp));
  }
  return out;
}

std::string utf8(uint32_t cp) {
  std::string out;
  append_utf8(out, cp);
  return out;
}

// Aho-Corasick over the triggers' code points: the trie's nodes (0: the root, "") with their
// moves over the alphabet. A node whose text ends with a trigger fires it (the longest one);
// the others are the free text's states.
struct TriggerAutomaton {
  CodePoints alphabet;     // every code point of a trigger, sorted
  std::vector<int> fires;  // [node]: the trigger its text ends with, or -1
  std::vector<int> moves;  // [node * alphabet.size() + i]: the node after alphabet[i]

  int move(int node, size_t i) const {
    return moves[static_cast<size_t>(node) * alphabet.size() + i];
  }
};

Result<TriggerAutomaton> trigger_automaton(const std::vector<std::string>& triggers) {
  if (triggers.empty()) return invalid_argument("'triggers' must not be empty");
  if (triggers.size() > kMaxTriggers) {
    return invalid_argument("at most " + std::to_string(kMaxTriggers) + " triggers");
  }
  TriggerAutomaton a;
  std::vector<CodePoints> decoded;
  size_t total = 0;
  for (const std::string& t : triggers) {
    if (t.empty()) return invalid_argument("a trigger must not be empty");
    SGL_ASSIGN_OR_RETURN(CodePoints cps, decode(t));
    total += cps.size();
    a.alphabet.insert(a.alphabet.end(), cps.begin(), cps.end());
    decoded.push_back(std::move(cps));
  }
  if (total > kMaxTriggerCodePoints) {
    return invalid_argument("the triggers hold more than " + std::to_string(kMaxTriggerCodePoints) +
                            " characters together");
  }
  std::sort(a.alphabet.begin(), a.alphabet.end());
  a.alphabet.erase(std::unique(a.alphabet.begin(), a.alphabet.end()), a.alphabet.end());
  const size_t width = a.alphabet.size();
  auto index_of = [&](uint32_t c) {
    return static_cast<size_t>(std::lower_bound(a.alphabet.begin(), a.alphabet.end(), c) -
                               a.alphabet.begin());
  };
  // The trie: children as alphabet indexes (-1: none), and where each trigger ends.
  std::vector<std::vector<int>> child(1, std::vector<int>(width, -1));
  a.fires = {-1};
  for (size_t t = 0; t < decoded.size(); ++t) {
    int node = 0;
    for (uint32_t c : decoded[t]) {
      int& next = child[static_cast<size_t>(node)][index_of(c)];
      if (next < 0) {
        next = static_cast<int>(child.size());
        child.emplace_back(width, -1);
        a.fires.push_back(-1);
      }
      node = next;
    }
    if (a.fires[static_cast<size_t>(node)] < 0)
      a.fires[static_cast<size_t>(node)] = static_cast<int>(t);
  }
  // Breadth first, so a node's failure link (its longest proper suffix in the trie) has its moves
  // already: a missing child moves where the failure link moves.
  a.moves.assign(child.size() * width, 0);
  std::vector<int> fail(child.size(), 0);
  std::vector<int> queue = {0};
  for (size_t head = 0; head < queue.size(); ++head) {
    const int node = queue[head];
    const auto n = static_cast<size_t>(node);
    // The longest trigger this text ends with is its own, or its failure link's.
    if (a.fires[n] < 0 && node != 0) a.fires[n] = a.fires[static_cast<size_t>(fail[n])];
    for (size_t i = 0; i < width; ++i) {
      const int next = child[n][i];
      const int fallback = node == 0 ? 0 : a.move(fail[n], i);
      if (next < 0) {
        a.moves[n * width + i] = fallback;
      } else {
        a.moves[n * width + i] = next;
        fail[static_cast<size_t>(next)] = fallback;
        queue.push_back(next);
      }
    }
  }
  return a;
}

}  // namespace

Result<RuleId> add_trigger_text(Grammar& g, const std::vector<std::string>& triggers,
                                const std::function<ExprId(size_t, RuleId)>& after, bool may_end) {
  SGL_ASSIGN_OR_RETURN(const TriggerAutomaton a, trigger_automaton(triggers));
  const RuleId text = g.add_rule(g.fresh_name("trigger_text"));
  // What follows each trigger, a rule each (-1: the trigger may not be written).
  std::vector<RuleId> fire_rules;
  for (size_t t = 0; t < triggers.size(); ++t) {
    const ExprId rest = after(t, text);
    fire_rules.push_back(rest < 0 ? -1 : g.add_rule(g.fresh_name("trigger_fired")));
    if (rest >= 0) g.set_body(fire_rules.back(), rest);
  }
  // The free text's states: the nodes reached from the root without firing, a rule each.
  std::vector<RuleId> state_rules(a.fires.size(), -1);
  state_rules[0] = text;
  std::vector<int> states = {0};
  size_t moves = 0;
  for (size_t head = 0; head < states.size(); ++head) {
    for (size_t i = 0; i < a.alphabet.size(); ++i) {
      const int next = a.move(states[head], i);
      moves += next != 0;
      if (a.fires[static_cast<size_t>(next)] >= 0 || state_rules[static_cast<size_t>(next)] >= 0) {
        continue;
      }
      state_rules[static_cast<size_t>(next)] =
          g.add_rule(g.fresh_name("trigger_text_" + std::to_string(next)));
      states.push_back(next);
    }
  }
  if (moves > kMaxTriggerMoves) {
    return invalid_argument("the triggers make an automaton of more than " +
                            std::to_string(kMaxTriggerMoves) + " moves");
  }
  for (int s : states) {
    std::vector<ExprId> alternatives;
    if (may_end) alternatives.push_back(g.empty());
    std::vector<CodePointRange> own_moves;  // code points that go anywhere but the start
    for (size_t i = 0; i < a.alphabet.size(); ++i) {
      const int next = a.move(s, i);
      if (next == 0) continue;
      const uint32_t c = a.alphabet[i];
      own_moves.push_back({c, c});
      const int fired = a.fires[static_cast<size_t>(next)];
      const RuleId target = fired >= 0 ? fire_rules[static_cast<size_t>(fired)]
                                       : state_rules[static_cast<size_t>(next)];
      if (target >= 0) alternatives.push_back(g.sequence({g.bytes(utf8(c)), g.ref(target)}));
    }
    alternatives.push_back(
        g.sequence({g.char_class(std::move(own_moves), /*negated=*/true), g.ref(text)}));
    g.set_body(state_rules[static_cast<size_t>(s)], g.choice(std::move(alternatives)));
  }
  return text;
}

Status check_excludes(const std::vector<std::string>& excluded,
                      const std::vector<std::string>& enders) {
  for (const std::string& x : excluded) {
    if (x.empty()) return invalid_argument("an excluded string must not be empty");
    for (const std::string& e : enders) {
      bool overlaps = e.find(x) != std::string::npos;
      for (size_t k = 1; !overlaps && k <= std::min(x.size(), e.size()); ++k) {
        overlaps = x.compare(x.size() - k, k, e, 0, k) == 0;
      }
      if (overlaps) {
        return invalid_argument("excluded string '" + x + "' overlaps '" + e +
                                "', which follows the text (not supported)");
      }
    }
  }
  return Status::ok_status();
}

Result<RuleId> add_triggered_tags(Grammar& g, const std::vector<std::string>& triggers,
                                  std::span<const TriggeredTag> tags,
                                  const TriggeredTagsOptions& options) {
  if (tags.empty()) return invalid_argument("there must be at least one tag");
  if (triggers.empty()) return invalid_argument("'triggers' must not be empty");
  for (const TriggeredTag& tag : tags) {
    std::vector<std::string> opening;
    for (const std::string& t : triggers) {
      if (tag.begin.starts_with(t) &&
          std::find(opening.begin(), opening.end(), t) == opening.end()) {
        opening.push_back(t);
      }
    }
    if (opening.empty()) {
      return invalid_argument("tag begin '" + tag.begin + "' starts with none of the triggers");
    }
    if (opening.size() > 1) {  // as xgrammar: which trigger opens it would be ambiguous
      return invalid_argument("tag begin '" + tag.begin + "' starts with more than one trigger ('" +
                              opening[0] + "', '" + opening[1] + "')");
    }
  }
  for (const std::string& trigger : triggers) {
    if (std::none_of(tags.begin(), tags.end(),
                     [&](const TriggeredTag& tag) { return tag.begin.starts_with(trigger); })) {
      return invalid_argument("trigger '" + trigger + "' begins none of the tags");
    }
  }
  std::vector<std::string> enders = triggers;
  enders.insert(enders.end(), options.ends.begin(), options.ends.end());
  SGL_RETURN_IF_ERROR(check_excludes(options.excludes, enders));
  // A whole tag from its begin's byte `skip` on, then free text again, or with
  // stop_after_first nothing more (but one of the ends, if the text has them).
  auto tag_from = [&](const TriggeredTag& tag, size_t skip, RuleId text) {
    return g.sequence({g.bytes(tag.begin.substr(skip)), tag.content,
                       options.stop_after_first ? g.one_of(options.ends) : g.ref(text)});
  };
  // The automaton's strings: the triggers, then the excluded strings, then the ends.
  std::vector<std::string> strings = triggers;
  strings.insert(strings.end(), options.excludes.begin(), options.excludes.end());
  strings.insert(strings.end(), options.ends.begin(), options.ends.end());
  SGL_ASSIGN_OR_RETURN(
      const RuleId text,
      add_trigger_text(
          g, strings,
          [&](size_t t, RuleId text) -> ExprId {
            if (t >= triggers.size() + options.excludes.size()) return g.empty();  // an end
            if (t >= triggers.size()) return -1;                                   // excluded
            std::vector<ExprId> rests;  // the tags this trigger opens, each past the trigger
            for (const TriggeredTag& tag : tags) {
              if (tag.begin.starts_with(triggers[t])) {
                rests.push_back(tag_from(tag, triggers[t].size(), text));
              }
            }
            return g.choice(std::move(rests));
          },
          /*may_end=*/options.ends.empty()));
  if (!options.at_least_one) return text;
  const RuleId first = g.add_rule(g.fresh_name("triggered_first"));
  std::vector<ExprId> starts;
  for (const TriggeredTag& tag : tags) starts.push_back(tag_from(tag, 0, text));
  g.set_body(first, g.choice(std::move(starts)));
  return first;
}

}  // namespace sgl::grammar
