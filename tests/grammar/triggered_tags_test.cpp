// Triggered tags (SGLang's structural tags): free text until a trigger, then one of the tags it
// opens. Against a reference matcher written from the definition (random strings over a small
// alphabet, overlapping and self-overlapping triggers), token masks against brute force, one
// stack frame however long the free text, and the request errors.
#include "grammar/triggered_tags.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <random>

#include "grammar/automaton.h"
#include "grammar/stack_engine.h"
#include "grammar/structural_tag.h"
#include "grammar/utf8.h"
#include "grammar_test_util.h"

namespace sgl::grammar {
namespace {

using test::full_match;
using test::must_compile;

struct LiteralTag {
  std::string begin, content, end;
};

// The definition, directly: scan the free text; where it first ends with a trigger (the
// longest one ending there), the text must go on with the rest of a tag that begins with that
// trigger, its content and its end, then free text again.
bool reference_match(const std::vector<std::string>& triggers, const std::vector<LiteralTag>& tags,
                     const TriggeredTagsOptions& options, const std::string& text) {
  const bool stop_after_first = options.stop_after_first;
  std::function<bool(size_t)> free_from = [&](size_t start) {
    for (size_t i = start; i < text.size(); ++i) {
      const std::string segment = text.substr(start, i + 1 - start);
      const std::string* fired = nullptr;
      for (const std::string& t : triggers) {
        if (segment.ends_with(t) && (!fired || t.size() > fired->size())) fired = &t;
      }
      if (!fired) continue;
      for (const LiteralTag& tag : tags) {
        if (!tag.begin.starts_with(*fired)) continue;
        const std::string rest = tag.begin.substr(fired->size()) + tag.content + tag.end;
        if (text.compare(i + 1, rest.size(), rest) != 0) continue;
        const size_t after = i + 1 + rest.size();
        if (stop_after_first ? after == text.size() : free_from(after)) return true;
      }
      return false;
    }
    return true;
  };
  if (!options.at_least_one) return free_from(0);
  for (const LiteralTag& tag : tags) {  // a whole tag first
    const std::string whole = tag.begin + tag.content + tag.end;
    if (!text.starts_with(whole)) continue;
    if (stop_after_first ? whole.size() == text.size() : free_from(whole.size())) return true;
  }
  return false;
}

std::shared_ptr<const CompiledGrammar> literal_tags_grammar(
    const std::vector<std::string>& triggers, const std::vector<LiteralTag>& tags,
    const TriggeredTagsOptions& options, std::shared_ptr<const TokenizerInfo> vocab = nullptr) {
  Grammar g;
  std::vector<TriggeredTag> built;
  for (const LiteralTag& t : tags) built.push_back({t.begin, g.bytes(t.content + t.end)});
  const RuleId root = g.add_rule("root");
  auto text = add_triggered_tags(g, triggers, built, options);
  if (!text.ok()) throw std::runtime_error(text.status().to_string());
  g.set_body(root, g.ref(*text));
  g.set_root(root);
  return must_compile(std::move(g), std::move(vocab));
}

struct Case {
  std::vector<std::string> triggers;
  std::vector<LiteralTag> tags;
};

TEST(TriggeredTags, MatchesTheDefinitionOnRandomStrings) {
  const std::vector<Case> cases = {
      {{"<f"}, {{"<f=a>", "1", "</f>"}, {"<f=b>", "22", "!"}}},
      {{"aab"}, {{"aab", "c", "b"}}},                      // self-overlapping prefix
      {{"abab"}, {{"abab", "", "c"}}},                     // a trigger with a border
      {{"ab", "b"}, {{"ab", "c", ""}, {"bc", "a", "a"}}},  // one trigger the other's suffix
      {{"a", "ba"}, {{"a", "b", "c"}, {"bab", "", ""}}},   // both fire at one position
      {{"<"}, {{"<", ">", ""}, {"<<", "", ">"}}},          // tags that share a trigger
      {{"b", "abc"}, {{"b", "a", ""}, {"abc", "", "!"}}},  // a trigger inside another
  };
  std::mt19937 rng(7);
  const std::string alphabet = "abc<f=>!12";
  for (const Case& c : cases) {
    for (const TriggeredTagsOptions options :
         {TriggeredTagsOptions{}, TriggeredTagsOptions{.stop_after_first = true},
          TriggeredTagsOptions{.at_least_one = true},
          TriggeredTagsOptions{.at_least_one = true, .stop_after_first = true}}) {
      SCOPED_TRACE(c.triggers[0] + (options.stop_after_first ? " stop_after_first" : "") +
                   (options.at_least_one ? " at_least_one" : ""));
      auto g = literal_tags_grammar(c.triggers, c.tags, options);
      int accepted = 0, with_tag = 0;
      for (int n = 0; n < 3000; ++n) {
        std::string s;
        const size_t len = rng() % 12;
        for (size_t k = 0; k < len; ++k) s += alphabet[rng() % 4 + (rng() % 3 == 0 ? 4 : 0)];
        if (n % 3 == 0) {  // plant a whole tag (at the start every other time) so tags are common
          const LiteralTag& t = c.tags[rng() % c.tags.size()];
          s.insert(n % 2 == 0 ? 0 : rng() % (s.size() + 1), t.begin + t.content + t.end);
        }
        const bool want = reference_match(c.triggers, c.tags, options, s);
        ASSERT_EQ(full_match(g, s), want) << "'" << s << "'";
        accepted += want;
        for (const std::string& t : c.triggers) with_tag += want && s.find(t) != std::string::npos;
      }
      EXPECT_GT(accepted, options.at_least_one ? 40 : 300);
      EXPECT_GT(with_tag, 40);
    }
  }
}

TEST(TriggeredTags, AtLeastOneStartsWithATag) {
  Grammar g;
  const RuleId root = g.add_rule("root");
  const TriggeredTag tag = {"<f>", g.bytes("1</f>")};
  auto text = add_triggered_tags(g, {"<f"}, {&tag, 1}, {.at_least_one = true});
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  g.set_body(root, g.ref(*text));
  g.set_root(root);
  auto c = must_compile(std::move(g));
  EXPECT_TRUE(full_match(c, "<f>1</f>"));
  EXPECT_TRUE(full_match(c, "<f>1</f> and then <f>1</f>"));
  EXPECT_FALSE(full_match(c, ""));
  EXPECT_FALSE(full_match(c, "x<f>1</f>"));
}

// Free text keeps one frame: calls in tail position return to the caller's parent.
TEST(TriggeredTags, LongFreeTextKeepsOneFrame) {
  Grammar g;
  const RuleId root = g.add_rule("root");
  const TriggeredTag tag = {"<tool_call>", g.bytes("{}</tool_call>")};
  auto text = add_triggered_tags(g, {"<tool_call>"}, {&tag, 1}, {});
  ASSERT_TRUE(text.ok());
  g.set_body(root, g.ref(*text));
  g.set_root(root);
  auto automaton = build_automaton(g);
  ASSERT_TRUE(automaton.ok()) << automaton.status().to_string();
  StackEngine engine(*automaton);
  SetId set = engine.initial_set();
  const std::string words = "the <tool call> is <tool_ not here; <tool_call>{}</tool_call> ok ";
  for (int i = 0; i < 2000; ++i) {
    for (char ch : words) {
      set = engine.step(set, static_cast<uint8_t>(ch));
      ASSERT_NE(set, StackEngine::kDeadSet) << i;
    }
  }
  EXPECT_TRUE(engine.can_accept(set));
  EXPECT_LT(engine.num_frames(), 64);
}

TEST(TriggeredTags, TokenMasksAreExact) {
  std::vector<std::string> tokens = {"</s>"};
  for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t :
       {"<tool", "_call", ">", "<tool_call>", "<tool_call>\n", " <", "call>", "{\"", "\": ", "1}",
        "}\n</tool_call>", "</tool_call>", "hello", " the", "\xE2\x96", "\x81", "\xE2\x96\x81"}) {
    tokens.push_back(t);
  }
  const auto n = static_cast<int32_t>(tokens.size());
  auto info = TokenizerInfo::create(std::move(tokens), n, {0});
  ASSERT_TRUE(info.ok());
  auto vocab = std::make_shared<const TokenizerInfo>(std::move(info).value());
  StructuralTagSpec spec;
  spec.triggers = {"<tool_call>"};
  spec.structures = {{"<tool_call>\n", R"({"type": "object", "properties": {"a": {"type":
      "integer"}}, "required": ["a"]})",
                      "\n</tool_call>"}};
  auto g = structural_tag_grammar(spec);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto compiled = must_compile(*g, vocab);
  for (const char* prefix : {"", "hello", "a <tool", "a <tool_call", "a <tool_call>\n{\"a\": 1",
                             "x <tool_call>\n{\"a\": 1}\n</tool_call> and", "\xE2\x96"}) {
    test::expect_mask_is_brute_force(compiled, *vocab, prefix);
  }
}

TEST(TriggeredTags, StructuralTagSchemas) {
  StructuralTagSpec spec;
  spec.triggers = {"<function="};
  spec.structures = {
      {"<function=get_weather>", R"({"type": "object", "properties": {"city": {"type":
          "string"}}, "required": ["city"], "additionalProperties": false})",
       "</function>"},
      {"<function=anything>", "", "</function>"}};
  auto g = structural_tag_grammar(spec);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto c = must_compile(*g);
  EXPECT_TRUE(full_match(c, "Let me look. <function=get_weather>{\"city\": \"Paris\"}</function>"));
  EXPECT_TRUE(full_match(c, "<function=anything>[1, \"x\", null]</function> then text"));
  EXPECT_TRUE(full_match(c, "no call at all, even <functio or <fun"));
  EXPECT_FALSE(full_match(c, "<function=get_weather>{\"town\": \"Paris\"}</function>"));
  EXPECT_FALSE(full_match(c, "<function=other>{}</function>"));
  EXPECT_FALSE(full_match(c, "<function=get_weather>{\"city\": \"Paris\"}"));  // unfinished
  // Non-ASCII triggers step by code point.
  spec.triggers = {"<｜call｜>"};
  spec.structures = {{"<｜call｜>", R"({"type": "integer"})", "<｜end｜>"}};
  auto wide = structural_tag_grammar(spec);
  ASSERT_TRUE(wide.ok()) << wide.status().to_string();
  auto w = must_compile(*wide);
  EXPECT_TRUE(full_match(w, "｜ <｜ text <｜call｜>12<｜end｜> é"));
  EXPECT_FALSE(full_match(w, "<｜call｜>x<｜end｜>"));
}

TEST(TriggeredTags, Errors) {
  auto message = [](StructuralTagSpec spec) {
    auto g = structural_tag_grammar(spec);
    return g.ok() ? std::string() : g.status().message();
  };
  const StructuralTagSpec::Structure s = {"<a>", "", "</a>"};
  EXPECT_NE(message({{s}, {}, false}).find("'triggers' must not be empty"), std::string::npos);
  EXPECT_NE(message({{}, {"<a"}, false}).find("'structures' must not be empty"), std::string::npos);
  EXPECT_NE(message({{s}, {""}, false}).find("must not be empty"), std::string::npos);
  EXPECT_NE(message({{s}, {"<b"}, false}).find("starts with none of the triggers"),
            std::string::npos);
  EXPECT_NE(message({{s}, {"<a", "<c"}, false}).find("'<c' begins none of the tags"),
            std::string::npos);
  EXPECT_NE(message({{{"\xFF>", "", ""}}, {"\xFF"}, false}).find("not valid UTF-8"),
            std::string::npos);
  EXPECT_NE(message({{{"<a>", R"({"type": "object", "multipleOf": 2})", ""}}, {"<a"}, false})
                .find("structures[0].schema"),
            std::string::npos);
  EXPECT_NE(message({{{std::string(600, 'x'), "", ""}}, {std::string(600, 'x')}, false})
                .find("characters together"),
            std::string::npos);
  // A trigger that is a prefix of another opens every tag the longer one would (as xgrammar).
  EXPECT_NE(message({{{"<ab>", "", ""}}, {"<a", "<ab"}, false}).find("more than one trigger"),
            std::string::npos);
  // The limits hold fast: 64 triggers of 8 distinct characters each.
  StructuralTagSpec wide;
  for (uint32_t t = 0; t < 64; ++t) {
    std::string trigger;
    for (uint32_t k = 0; k < 8; ++k) append_utf8(trigger, 0x4E00 + t * 8 + k);
    wide.triggers.push_back(trigger);
    wide.structures.push_back({trigger, "", ""});
  }
  const auto start = std::chrono::steady_clock::now();
  auto big = structural_tag_grammar(wide);
  EXPECT_TRUE(big.ok() || big.status().message().find("moves") != std::string::npos)
      << big.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace sgl::grammar
