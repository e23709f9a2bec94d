// The structural tag's format tree (xgrammar's: const_string, json_schema, grammar, regex,
// any_text, sequence, or, tag, triggered_tags, tags_with_separator) as grammars: what each
// accepts and refuses, the any_text-in-a-tag rule (text up to the end's first appearance),
// xgrammar's own examples, and the errors.
#include "grammar/structural_tag.h"

#include <gtest/gtest.h>

#include "grammar_test_util.h"

namespace sgl::grammar {
namespace {

using test::full_match;
using test::must_compile;
using Type = StructuralFormat::Type;

StructuralFormat leaf(Type type, std::string value = "") {
  return {.type = type, .value = std::move(value)};
}

StructuralFormat any_text(std::vector<std::string> excluded = {}) {
  return {.type = Type::kAnyText, .strings = std::move(excluded)};
}

StructuralFormat tag(std::string begin, StructuralFormat content, std::string end) {
  StructuralFormat f{.type = Type::kTag, .begin = std::move(begin), .ends = {std::move(end)}};
  f.elements.push_back(std::move(content));
  return f;
}

StructuralFormat of(Type type, std::vector<StructuralFormat> elements) {
  StructuralFormat f{.type = type};
  f.elements = std::move(elements);
  return f;
}

std::shared_ptr<const CompiledGrammar> compiled(const StructuralFormat& f) {
  auto g = structural_tag_grammar(f);
  if (!g.ok()) throw std::runtime_error(g.status().to_string());
  return must_compile(std::move(g).value());
}

TEST(StructuralTag, LeavesSequenceAndOr) {
  auto c = compiled(
      of(Type::kSequence, {leaf(Type::kConstString, "A:"),
                           of(Type::kOr, {leaf(Type::kRegex, "[0-9]+"),
                                          leaf(Type::kJsonSchema, R"({"type": "boolean"})")}),
                           leaf(Type::kGrammar, R"(root ::= "!" | "?")")}));
  EXPECT_TRUE(full_match(c, "A:12!"));
  EXPECT_TRUE(full_match(c, "A:true?"));
  EXPECT_FALSE(full_match(c, "A:x!"));
  EXPECT_FALSE(full_match(c, "A:12"));
  EXPECT_FALSE(full_match(c, "B:12!"));
  // An empty schema is any JSON value.
  auto any = compiled(leaf(Type::kJsonSchema));
  EXPECT_TRUE(full_match(any, R"({"a": [1, null]})"));
  EXPECT_FALSE(full_match(any, "{"));
}

TEST(StructuralTag, AnyTextInATagRunsToTheEnd) {
  auto think = compiled(tag("<think>", any_text(), "</think>"));
  EXPECT_TRUE(full_match(think, "<think>a < / b </thin k></think>"));
  EXPECT_TRUE(full_match(think, "<think></think>"));
  EXPECT_FALSE(full_match(think, "<think>a</think>b"));  // the tag ends at the first end
  EXPECT_FALSE(full_match(think, "<think>a"));
  auto excluded = compiled(tag("<a>", any_text({"x"}), "</a>"));
  EXPECT_TRUE(full_match(excluded, "<a>yes</a>"));
  EXPECT_FALSE(full_match(excluded, "<a>xyz</a>"));
  // Outside a tag: any text but the excluded strings, or any text at all.
  auto bare = compiled(any_text({"bad"}));
  EXPECT_TRUE(full_match(bare, "good text, b a d"));
  EXPECT_FALSE(full_match(bare, "this is bad"));
  EXPECT_TRUE(full_match(compiled(any_text()), "anything \xC3\xA9 at all"));
}

// Free text that ends a tag stops at the tag's end however deep it sits (the last element of a
// sequence, each branch of an or, triggered tags), as xgrammar passes the end down.
TEST(StructuralTag, NestedFreeTextStopsAtTheEnd) {
  auto seq = compiled(
      tag("<t>", of(Type::kSequence, {leaf(Type::kConstString, "A:"), any_text()}), "</t>"));
  EXPECT_TRUE(full_match(seq, "<t>A: x < y</t>"));
  EXPECT_FALSE(full_match(seq, "<t>A: x</t>y</t>"));
  auto either =
      compiled(tag("<t>", of(Type::kOr, {leaf(Type::kRegex, "[0-9]+"), any_text({"!"})}), "</t>"));
  EXPECT_TRUE(full_match(either, "<t>12</t>"));
  EXPECT_TRUE(full_match(either, "<t>words</t>"));
  EXPECT_FALSE(full_match(either, "<t>a</t>b</t>"));
  EXPECT_FALSE(full_match(either, "<t>wow!</t>"));
  StructuralFormat calls{.type = Type::kTriggeredTags, .strings = {"<f>"}};
  calls.elements = {tag("<f>", leaf(Type::kJsonSchema, R"({"type": "integer"})"), "</f>")};
  auto inside = compiled(tag("<answer>", calls, "</answer>"));
  EXPECT_TRUE(full_match(inside, "<answer>so <f>1</f> and <f>2</f>.</answer>"));
  EXPECT_FALSE(full_match(inside, "<answer>so</answer> more</answer>"));
  EXPECT_FALSE(full_match(inside, "<answer><f>x</f></answer>"));
  calls.stop_after_first = true;
  auto once = compiled(tag("<answer>", calls, "</answer>"));
  EXPECT_TRUE(full_match(once, "<answer>so <f>1</f></answer>"));
  EXPECT_FALSE(full_match(once, "<answer>so <f>1</f> more</answer>"));
  // The triggered text's own excluded strings.
  calls.stop_after_first = false;
  calls.excludes = {"bad"};
  auto clean = compiled(calls);
  EXPECT_TRUE(full_match(clean, "fine <f>1</f> text"));
  EXPECT_FALSE(full_match(clean, "a bad <f>1</f>"));
}

TEST(StructuralTag, TriggeredTagsAndTagsWithSeparator) {
  StructuralFormat calls{.type = Type::kTriggeredTags, .strings = {"<f="}};
  calls.elements = {tag("<f=a>", leaf(Type::kJsonSchema, R"({"type": "integer"})"), "</f>"),
                    tag("<f=b>", any_text(), "</f>")};
  auto c = compiled(calls);
  EXPECT_TRUE(full_match(c, "hi <f=a>12</f> there <f=b>free < text</f>"));
  EXPECT_FALSE(full_match(c, "hi <f=a>x</f>"));
  EXPECT_FALSE(full_match(c, "hi <f=c>1</f>"));

  StructuralFormat list{.type = Type::kTagsWithSeparator, .separator = ","};
  list.elements = {tag("<a>", leaf(Type::kConstString, "1"), "</a>"),
                   tag("<b>", leaf(Type::kConstString, "2"), "</b>")};
  auto l = compiled(list);
  EXPECT_TRUE(full_match(l, ""));
  EXPECT_TRUE(full_match(l, "<a>1</a>"));
  EXPECT_TRUE(full_match(l, "<a>1</a>,<b>2</b>,<a>1</a>"));
  EXPECT_FALSE(full_match(l, "<a>1</a> <b>2</b>"));
  EXPECT_FALSE(full_match(l, "text"));
  list.at_least_one = true;
  EXPECT_FALSE(full_match(compiled(list), ""));
  list.stop_after_first = true;
  auto one = compiled(list);
  EXPECT_TRUE(full_match(one, "<b>2</b>"));
  EXPECT_FALSE(full_match(one, "<a>1</a>,<b>2</b>"));
}

// xgrammar's "force think" example: a thinking tag, then text with triggered calls; and its
// DeepSeek example: one block of calls separated by newlines, then the end.
TEST(StructuralTag, XgrammarExamples) {
  StructuralFormat calls{.type = Type::kTriggeredTags, .strings = {"<function="}};
  calls.elements = {
      tag("<function=f>", leaf(Type::kJsonSchema, R"({"type": "object"})"), "</function>")};
  auto think = compiled(of(Type::kSequence, {tag("<think>", any_text(), "</think>"), calls}));
  EXPECT_TRUE(full_match(think, "<think>hmm <function= maybe</think>ok <function=f>{}</function>"));
  EXPECT_FALSE(full_match(think, "ok <function=f>{}</function>"));
  EXPECT_FALSE(full_match(think, "<think></think><function=g>{}</function>"));

  StructuralFormat inner{.type = Type::kTagsWithSeparator, .separator = "\n"};
  inner.elements = {tag("<｜tool▁call▁begin｜>f\n```json\n",
                        leaf(Type::kJsonSchema, R"({"type": "integer"})"),
                        "\n```<｜tool▁call▁end｜>")};
  StructuralFormat block{.type = Type::kTriggeredTags, .strings = {"<｜tool▁calls▁begin｜>"}};
  block.stop_after_first = true;
  block.elements = {tag("<｜tool▁calls▁begin｜>", inner, "<｜tool▁calls▁end｜>")};
  auto d = compiled(block);
  EXPECT_TRUE(full_match(
      d,
      "Sure.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f\n```json\n1\n```<｜tool▁call▁end｜>\n"
      "<｜tool▁call▁begin｜>f\n```json\n2\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"));
  EXPECT_FALSE(
      full_match(d,
                 "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f\n```json\nx\n```<｜tool▁call▁end｜>"
                 "<｜tool▁calls▁end｜>"));
  EXPECT_FALSE(full_match(d, "<｜tool▁calls▁begin｜><｜tool▁calls▁end｜> and after"));
}

TEST(StructuralTag, Errors) {
  auto message = [](const StructuralFormat& f) {
    auto g = structural_tag_grammar(f);
    return g.ok() ? std::string() : g.status().message();
  };
  EXPECT_NE(message(of(Type::kSequence, {})).find("format.elements must not be empty"),
            std::string::npos);
  StructuralFormat list{.type = Type::kTagsWithSeparator};
  list.elements = {leaf(Type::kConstString, "x")};
  EXPECT_NE(message(list).find("format.tags[0] must be a tag"), std::string::npos);
  EXPECT_NE(message(of(Type::kOr, {leaf(Type::kRegex, "a"), leaf(Type::kRegex, "(?=a)")}))
                .find("format.elements[1]: "),
            std::string::npos);
  StructuralFormat deep = leaf(Type::kConstString, "x");
  for (int i = 0; i < kMaxStructuralDepth + 2; ++i) deep = of(Type::kSequence, {deep});
  EXPECT_NE(message(deep).find("nest deeper"), std::string::npos);
  // An excluded string the end would write (the automaton would fire it inside the end).
  EXPECT_NE(message(tag("<a>", any_text({"\n"}), "\n</a>")).find("overlaps"), std::string::npos);
  EXPECT_NE(message(tag("<a>", any_text({"b</"}), "</a>")).find("overlaps"), std::string::npos);
  EXPECT_NE(message(tag("<a>", any_text({""}), "</a>")).find("must not be empty"),
            std::string::npos);
  StructuralFormat endless{.type = Type::kTag, .begin = "<a>"};
  endless.elements = {any_text()};
  EXPECT_NE(message(endless).find("needs an 'end'"), std::string::npos);
  StructuralFormat unopened{.type = Type::kTriggeredTags, .strings = {"<g"}};
  unopened.elements = {tag("<f>", leaf(Type::kConstString, ""), "")};
  EXPECT_NE(message(unopened).find("format: tag begin '<f>' starts with none of the triggers"),
            std::string::npos);
}

}  // namespace
}  // namespace sgl::grammar
