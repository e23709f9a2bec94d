// The trigger automaton as right-linear rules, and structural tags built on it.
#include "grammar/triggered_tags.h"

#include <algorithm>
#include <map>

#include "grammar/json_schema_compiler.h"
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

bool ends_with(const CodePoints& text, const CodePoints& suffix) {
  return suffix.size() <= text.size() && std::equal(suffix.rbegin(), suffix.rend(), text.rbegin());
}

bool contains(const CodePoints& text, const CodePoints& part) {
  return std::search(text.begin(), text.end(), part.begin(), part.end()) != text.end();
}

std::string utf8(uint32_t cp) {
  std::string out;
  append_utf8(out, cp);
  return out;
}

// The automaton's states are the triggers' prefixes that hold no trigger (state 0: ""); a step
// on code point c goes to the longest prefix that ends the text, or fires the longest trigger
// the text now ends with.
struct TriggerAutomaton {
  std::vector<CodePoints> triggers;
  std::vector<CodePoints> states;
  std::map<CodePoints, int> state_of;
  CodePoints alphabet;  // every code point of a trigger, sorted

  struct Step {
    int next = 0;   // the state, when fire < 0
    int fire = -1;  // the trigger completed, or -1
  };

  Step step(int state, uint32_t c) const {
    CodePoints text = states[state];
    text.push_back(c);
    Step s;
    size_t longest = 0;
    for (size_t t = 0; t < triggers.size(); ++t) {
      if (triggers[t].size() > longest && ends_with(text, triggers[t])) {
        longest = triggers[t].size();
        s.fire = static_cast<int>(t);
      }
    }
    if (s.fire >= 0) return s;
    for (size_t from = 0; from <= text.size(); ++from) {
      auto it =
          state_of.find(CodePoints(text.begin() + static_cast<std::ptrdiff_t>(from), text.end()));
      if (it != state_of.end()) {
        s.next = it->second;
        break;
      }
    }
    return s;
  }
};

Result<TriggerAutomaton> trigger_automaton(const std::vector<std::string>& triggers) {
  if (triggers.empty()) return invalid_argument("'triggers' must not be empty");
  if (triggers.size() > kMaxTriggers) {
    return invalid_argument("at most " + std::to_string(kMaxTriggers) + " triggers");
  }
  TriggerAutomaton a;
  size_t total = 0;
  for (const std::string& t : triggers) {
    if (t.empty()) return invalid_argument("a trigger must not be empty");
    SGL_ASSIGN_OR_RETURN(CodePoints cps, decode(t));
    total += cps.size();
    a.alphabet.insert(a.alphabet.end(), cps.begin(), cps.end());
    a.triggers.push_back(std::move(cps));
  }
  if (total > kMaxTriggerCodePoints) {
    return invalid_argument("the triggers hold more than " + std::to_string(kMaxTriggerCodePoints) +
                            " characters together");
  }
  std::sort(a.alphabet.begin(), a.alphabet.end());
  a.alphabet.erase(std::unique(a.alphabet.begin(), a.alphabet.end()), a.alphabet.end());
  auto add_state = [&](const CodePoints& prefix) {
    if (a.state_of.contains(prefix)) return;
    for (const CodePoints& t : a.triggers) {
      if (contains(prefix, t)) return;  // never reached: the trigger fired earlier
    }
    a.state_of.emplace(prefix, static_cast<int>(a.states.size()));
    a.states.push_back(prefix);
  };
  add_state({});
  for (const CodePoints& t : a.triggers) {
    for (size_t n = 1; n < t.size(); ++n) add_state(CodePoints(t.begin(), t.begin() + n));
  }
  return a;
}

}  // namespace

Result<RuleId> add_triggered_tags(Grammar& g, const std::vector<std::string>& triggers,
                                  std::span<const TriggeredTag> tags,
                                  const TriggeredTagsOptions& options) {
  if (tags.empty()) return invalid_argument("there must be at least one tag");
  SGL_ASSIGN_OR_RETURN(const TriggerAutomaton a, trigger_automaton(triggers));
  const RuleId text = g.add_rule(g.fresh_name("triggered_text"));
  std::vector<RuleId> state_rules(a.states.size());
  state_rules[0] = text;
  for (size_t s = 1; s < a.states.size(); ++s) {
    state_rules[s] = g.add_rule(g.fresh_name("triggered_text_" + std::to_string(s)));
  }
  // After a tag: free text again, or nothing.
  auto after_tag = [&] { return options.stop_after_first ? g.empty() : g.ref(text); };
  auto whole_tag = [&](const TriggeredTag& tag, size_t skip) {
    return g.sequence(
        {g.bytes(tag.begin.substr(skip)), tag.content, g.bytes(tag.end), after_tag()});
  };
  for (const TriggeredTag& tag : tags) {
    const bool opened = std::any_of(triggers.begin(), triggers.end(),
                                    [&](const std::string& t) { return tag.begin.starts_with(t); });
    if (!opened) {
      return invalid_argument("tag begin '" + tag.begin + "' starts with none of the triggers");
    }
  }
  // fire_T: the rest of a tag that begins with trigger T.
  std::vector<RuleId> fire_rules;
  for (const std::string& trigger : triggers) {
    std::vector<ExprId> rests;
    for (const TriggeredTag& tag : tags) {
      if (tag.begin.starts_with(trigger)) rests.push_back(whole_tag(tag, trigger.size()));
    }
    if (rests.empty()) return invalid_argument("trigger '" + trigger + "' begins none of the tags");
    fire_rules.push_back(g.add_rule(g.fresh_name("triggered_tag")));
    g.set_body(fire_rules.back(), rests.size() == 1 ? rests[0] : g.choice(std::move(rests)));
  }
  for (size_t s = 0; s < a.states.size(); ++s) {
    std::vector<ExprId> alternatives = {g.empty()};
    std::vector<CodePointRange> own_steps;  // code points that go anywhere but the start
    for (uint32_t c : a.alphabet) {
      const TriggerAutomaton::Step step = a.step(static_cast<int>(s), c);
      if (step.fire < 0 && step.next == 0) continue;
      own_steps.push_back({c, c});
      const RuleId target = step.fire >= 0 ? fire_rules[step.fire] : state_rules[step.next];
      alternatives.push_back(g.sequence({g.bytes(utf8(c)), g.ref(target)}));
    }
    alternatives.push_back(
        g.sequence({g.char_class(std::move(own_steps), /*negated=*/true), g.ref(text)}));
    g.set_body(state_rules[s], g.choice(std::move(alternatives)));
  }
  if (!options.at_least_one) return text;
  const RuleId first = g.add_rule(g.fresh_name("triggered_first"));
  std::vector<ExprId> starts;
  for (const TriggeredTag& tag : tags) starts.push_back(whole_tag(tag, 0));
  g.set_body(first, starts.size() == 1 ? starts[0] : g.choice(std::move(starts)));
  return first;
}

Result<Grammar> structural_tag_grammar(const StructuralTagSpec& spec) {
  if (spec.structures.empty()) return invalid_argument("'structures' must not be empty");
  Grammar g;
  std::vector<TriggeredTag> tags;
  for (size_t i = 0; i < spec.structures.size(); ++i) {
    const StructuralTagSpec::Structure& s = spec.structures[i];
    auto schema = json_schema_to_grammar(s.schema_json.empty() ? "{}" : s.schema_json);
    if (!schema.ok()) {
      return invalid_argument("structures[" + std::to_string(i) +
                              "].schema: " + schema.status().message());
    }
    const RuleId content = g.import_rules(*schema, "s" + std::to_string(i) + "_");
    tags.push_back({s.begin, g.ref(content), s.end});
  }
  const RuleId root = g.add_rule("root");
  SGL_ASSIGN_OR_RETURN(const RuleId text, add_triggered_tags(g, spec.triggers, tags,
                                                             {.at_least_one = spec.at_least_one}));
  g.set_body(root, g.ref(text));
  g.set_root(root);
  return g;
}

}  // namespace sgl::grammar
