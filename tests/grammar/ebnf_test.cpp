// EBNF parsing, the grammar checks (undefined rules, left recursion, empty languages, limits),
// and byte-level matching of EBNF grammars.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/ebnf_parser.h"
#include "grammar/grammar_matcher.h"

namespace sgl::grammar {
namespace {

Result<std::shared_ptr<const CompiledGrammar>> compile_text(const std::string& text) {
  SGL_ASSIGN_OR_RETURN(Grammar g, parse_ebnf(text));
  return CompiledGrammar::compile(std::move(g), nullptr);
}

// The whole string is in the language.
bool full_match(const std::shared_ptr<const CompiledGrammar>& g, const std::string& s) {
  GrammarMatcher m(g);
  return m.accept_bytes(s) && m.can_terminate();
}

std::string error_of(const std::string& text) {
  auto c = compile_text(text);
  return c.ok() ? "" : c.status().message();
}

struct MatchCase {
  std::string grammar;
  std::vector<std::string> accept;
  std::vector<std::string> reject;
};

TEST(grammar_ebnf_match, Table) {
  const std::vector<MatchCase> cases = {
      {R"(root ::= "abc")", {"abc"}, {"", "ab", "abcd", "abd"}},
      {R"(root ::= "a" | "b" | "")", {"a", "b", ""}, {"ab", "c"}},
      {R"(root ::= ("ab")*)", {"", "ab", "abab"}, {"a", "aba", "ba"}},
      {R"(root ::= "x"+)", {"x", "xxx"}, {""}},
      {R"(root ::= "x"? "y")", {"y", "xy"}, {"xxy", "x"}},
      {R"(root ::= "a"{3})", {"aaa"}, {"aa", "aaaa"}},
      {R"(root ::= "a"{2,})", {"aa", "aaaaa"}, {"", "a"}},
      {R"(root ::= "a"{1,3} "b")", {"ab", "aab", "aaab"}, {"b", "aaaab"}},
      {R"(root ::= "a"{0,2})", {"", "a", "aa"}, {"aaa"}},
      {R"(root ::= [a-c0-2]+)", {"a", "c2b0"}, {"d", "3", ""}},
      {R"(root ::= [^a-c])", {"d", "\xC3\xA9", "\xF0\x9F\x98\x80", "\n"}, {"a", "b", "dd", ""}},
      {R"(root ::= .)", {"a", "\xE2\x82\xAC", "\xF4\x8F\xBF\xBF"}, {"", "ab", "\xC3", "\xFF"}},
      // Classes over code points: ranges spanning encoded lengths.
      {R"(root ::= [\u00E0-\u20AC])",
       {"\xC3\xA0", "\xDF\xBF", "\xE0\xA0\x80", "\xE2\x82\xAC"},
       {"\xC3\x9F", "\xE2\x82\xAD", "a"}},
      {R"(root ::= [\U0001F600-\U0001F64F]*)",
       {"\xF0\x9F\x98\x80\xF0\x9F\x99\x8F"},
       {"\xF0\x9F\x99\x90"}},
      {R"(root ::= "é€😀")", {"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"}, {"\xC3\xA9"}},
      {R"(root ::= "\x41\u00e9\n\t\"\\")", {"A\xC3\xA9\n\t\"\\"}, {"A"}},
      {R"(root ::= 'single' "\'")", {"single'"}, {"single"}},
      {R"(root ::= [\]\-\^] [\x00-\x1F])", {"]\x01", "-\x1F", "^\n"}, {"a\x01", "]a"}},
      // Rules, recursion, nullable rules, multi-line rules and comments.
      {R"g(root ::= "(" inner ")"   # parentheses
          inner ::= root | ""
       )g",
       {"()", "(())", "((()))"},
       {"(", "(()", "())", ""}},
      {R"(root ::= item ("," item)*
          item ::= [0-9]+ | "[" root? "]")",
       {"1", "1,2", "[]", "[1,[2,3]]", "[[[]]]"},
       {"", ",", "1,", "[1,]", "[[]"}},
      {R"(root ::= a b c
          a ::= "x"?
          b ::= a a
          c ::= "y")",
       {"y", "xy", "xxxy"},
       {"xxxxy", "x"}},
      {R"(root ::= (a | b)*
          a ::= "a"?
          b ::= "b")",
       {"", "a", "abba"},
       {"c"}},
      // A rule defined after its use; names with - and .
      {R"(root ::= ws-item.x ws-item.x
          ws-item.x ::= " "* "z")",
       {"zz", " z  z"},
       {"z"}},
      // Unused rules, even broken ones, are fine.
      {R"(root ::= "ok"
          unused ::= unused "x")",
       {"ok"},
       {}},
      // A branch that can never finish is trimmed: its prefix is not accepted.
      {R"(root ::= "a" | "b" dead
          dead ::= "c" dead)",
       {"a"},
       {"b", "bc", "bccc"}},
  };
  for (const MatchCase& c : cases) {
    auto g = compile_text(c.grammar);
    ASSERT_TRUE(g.ok()) << c.grammar << ": " << g.status().to_string();
    for (const std::string& s : c.accept) EXPECT_TRUE(full_match(*g, s)) << c.grammar << " / " << s;
    for (const std::string& s : c.reject) {
      EXPECT_FALSE(full_match(*g, s)) << c.grammar << " / " << s;
    }
  }
}

TEST(grammar_ebnf_match, DeadPrefixIsRejectedAtOnce) {
  auto g = compile_text(R"(root ::= "a" | "b" dead
                           dead ::= "c" dead)");
  ASSERT_TRUE(g.ok());
  GrammarMatcher m(*g);
  EXPECT_FALSE(m.accept_bytes("b"));  // trimmed, not accepted and then stuck
}

TEST(grammar_ebnf_match, DeepRecursionGrowsTheStack) {
  auto g = compile_text(R"(root ::= "[" root "]" | "x")");
  ASSERT_TRUE(g.ok());
  const int depth = 5000;
  GrammarMatcher m(*g);
  ASSERT_TRUE(m.accept_bytes(std::string(depth, '[') + "x"));
  EXPECT_FALSE(m.can_terminate());
  ASSERT_TRUE(m.accept_bytes(std::string(depth - 1, ']')));
  EXPECT_FALSE(m.can_terminate());
  ASSERT_TRUE(m.accept_bytes("]"));
  EXPECT_TRUE(m.can_terminate());
  EXPECT_FALSE(m.accept_bytes("]"));
}

TEST(grammar_ebnf_match, RoundTripThroughToString) {
  const std::string text = R"(root ::= "a\n\"" [^\]x-z\u00E9] (b | "c")* b{2,5} b{3} b{1,} .
                              b ::= [0-9]?)";
  auto g1 = parse_ebnf(text);
  ASSERT_TRUE(g1.ok()) << g1.status().to_string();
  const std::string printed = g1->to_string();
  auto g2 = parse_ebnf(printed);
  ASSERT_TRUE(g2.ok()) << printed << g2.status().to_string();
  EXPECT_EQ(g2->to_string(), printed);
}

struct ErrorCase {
  std::string grammar;
  std::string expected;  // a substring of the message
};

TEST(grammar_ebnf_errors, ClearMessages) {
  const std::vector<ErrorCase> cases = {
      {"root ::= \"a\" foo", "line 1, column 14: undefined rule 'foo'"},
      {"root ::= \"a\"\n\nx ::= \"b\"\n  y", "line 4, column 3: undefined rule 'y'"},
      {"root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice"},
      {"start ::= \"a\"", "no rule named 'root'"},
      {"root ::= \"abc", "unterminated string literal"},
      {"root ::= [abc", "unterminated character class"},
      {"root ::= \"\\q\"", "unknown escape '\\q'"},
      {"root ::= \"\\x4\"", "escape needs 2 hex digits"},
      {"root ::= \"\\uD800\"", "not a Unicode scalar value"},
      {"root ::= (\"a\"", "unclosed '('"},
      {"root ::= \"a\")", "unbalanced ')'"},
      {"root ::= [z-a]", "range is reversed"},
      {"root ::= \"a\"{3,2}", "the maximum is below the minimum"},
      {"root ::= \"a\"{2", "expected '}'"},
      {"root ::= \"a\"{x}", "expected a number"},
      {"root ::= \"a\"**", "a quantifier cannot follow another"},
      {"root ::= \"a\"{1000001}", "repetition bound above"},
      {"root = \"a\"", "expected '::='"},
      {"::= \"a\"", "expected a rule name"},
      {"root ::= @", "unexpected character '@'"},
      {"root ::= \"\xFF\"", "invalid UTF-8"},
      // Left recursion: direct, indirect, through a nullable prefix, inside a repetition.
      {"root ::= root \"a\" | \"b\"", "left recursion is not supported: root -> root"},
      {"root ::= a\na ::= b \"x\"\nb ::= a | \"y\"",
       "left recursion is not supported: a -> b -> a"},
      {"root ::= opt root \"x\" | \"y\"\nopt ::= \"z\"?",
       "left recursion is not supported: root -> root"},
      {"root ::= (\"q\"* root)? \"x\"", "left recursion"},
      // No string at all.
      {"root ::= \"a\" root", "the root rule 'root' accepts no string"},
      {"root ::= [^\\x00-\\U0010FFFF]", "accepts no string"},
      {"root ::= a\na ::= \"(\" a \")\"", "accepts no string"},
      // Size limits.
      {"root ::= (((\"a\"{1000}){1000}){1000})", "too large"},
      // A nullable repetition: every copy's closure reaches every later copy (quadratic).
      {"root ::= (\"a\"?){0,100000}", "may be empty"},
  };
  for (const ErrorCase& c : cases) {
    const std::string message = error_of(c.grammar);
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << "grammar: " << c.grammar << "\nmessage: " << message;
  }
}

TEST(grammar_ebnf_errors, DeepNestingIsAnErrorNotACrash) {
  const std::string text =
      "root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')');
  EXPECT_NE(error_of(text).find("nesting deeper than"), std::string::npos);
}

TEST(grammar_ebnf_errors, HugeTextIsRefused) {
  const std::string text = "root ::= \"" + std::string(2 << 20, 'a') + "\"";
  EXPECT_NE(error_of(text).find("exceeds the limit"), std::string::npos);
}

}  // namespace
}  // namespace sgl::grammar
