// The regex compiler checked against PCRE2 full matches: strings our matcher generates must
// match PCRE2, and random / mutated strings must get the same verdict from both.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammar/regex_compiler.h"
#include "grammar_test_util.h"
#include "pcre2_reference.h"

namespace sgl::grammar {
namespace {

using test::full_match;
using test::must_compile;

const std::vector<std::string> kPatterns = {
    "abc",
    "a|b|cd",
    "(ab)*c",
    "(?:ab|cd)+",
    "a?b?c?",
    "a{3}",
    "a{2,}b",
    "a{1,3}",
    "(a|bc){0,2}d",
    "[a-z]+",
    "[^a-z]{1,3}",
    "[a\\-z]",
    "[]a]+",
    "[^]a]",
    "[\\]\\\\]+",
    "\\d+",
    "\\D\\W\\S",
    "\\w+@\\w+\\.com",
    "\\s*x\\s*",
    "[\\d\\s]+",
    "[^\\d\\s]",
    "[\\w.-]+",
    ".",
    ".{2,4}",
    "\\.",
    "\\\\n",
    "\\n\\t",
    "a\\x41\\x{e9}",
    "\\u00e9\\u20ac+",
    "[\\u00e0-\\u00ff]+",
    "[^\\x00-\\x7f]",
    "é+|ü?",
    "😀{2}",
    "^abc$",
    "^a|b$",
    "(?<year>\\d{4})-(?P<month>\\d\\d)",
    "a{,",
    "x{a}",
    "{}",
    "a*?b+?c??",
    "(a*)*",
    "(a|)+b",
    "()",
    "",
    "-?(0|[1-9]\\d*)(\\.\\d+)?([eE][+-]?\\d+)?",
    "\\d{3}-\\d{3}-\\d{4}",
    "[A-Z][a-z]*( [A-Z][a-z]*)*",
    "(true|false|null)",
    "#[0-9a-fA-F]{6}",
    "(\\d{1,3}\\.){3}\\d{1,3}",
    "[a-f0-9]{8}-[a-f0-9]{4}",
    "(https?://)?[a-z]+(\\.[a-z]+)+(/[a-z]*)*",
    "\"[^\"]*\"",
    "[+*?()|{}$^.]+",
    "\\+\\*\\?\\(\\)\\|\\{\\}\\$\\^",
    "((a|b)(c|d)){2,3}",
    "[\\t\\n\\r ]+",
    "\\f\\v\\a\\e\\0",
    "[\\b]",
    "(?:(?:(?:x)))",
};

TEST(grammar_regex, AgreesWithPcre2) {
  std::mt19937 rng(1234);
  const std::string alphabet = "abcdxzAZ09-_. @:/\\\"\n\t{}+*?\xC3\xA9\xF0\x9F\x98\x80";
  int checked = 0;
  for (const std::string& pattern : kPatterns) {
    SCOPED_TRACE(pattern);
    auto g = regex_to_grammar(pattern);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    auto compiled = must_compile(std::move(g).value());
    const test::Pcre2Reference pcre(pattern);
    std::vector<std::string> samples;
    for (int i = 0; i < 40; ++i) {
      std::string s;
      ASSERT_TRUE(test::random_walk(compiled, rng, s, 12, 0.2));
      EXPECT_TRUE(pcre.full_match(s)) << "generated: " << s;
      samples.push_back(s);
    }
    // Mutations of generated strings and random strings: the verdicts must agree.
    std::vector<std::string> probes;
    for (const std::string& s : samples) {
      std::string t = s;
      const int op = static_cast<int>(rng() % 3);
      const size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
      if (op == 0 && !t.empty() && at < t.size()) t.erase(at, 1);
      if (op == 1) t.insert(at, 1, alphabet[rng() % alphabet.size()]);
      if (op == 2) t += s;
      probes.push_back(t);
    }
    for (int i = 0; i < 60; ++i) {
      std::string t;
      const size_t len = rng() % 6;
      for (size_t k = 0; k < len; ++k) t += alphabet[rng() % alphabet.size()];
      probes.push_back(t);
    }
    for (const std::string& t : probes) {
      if (!test::valid_utf8(t)) continue;
      EXPECT_EQ(full_match(compiled, t), pcre.full_match(t)) << "probe: " << t;
      ++checked;
    }
  }
  EXPECT_GT(checked, 4000);
}

TEST(grammar_regex, JsonStringModeEscapes) {
  Grammar g;
  const RuleId root = g.add_rule("root");
  RegexOptions options;
  options.json_string = true;
  auto e = compile_regex(g, "a\"b\\\\c\\n[\\x00-\\x1f\"]", options);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  g.set_body(root, *e);
  g.set_root(root);
  auto compiled = must_compile(std::move(g));
  EXPECT_TRUE(full_match(compiled, "a\\\"b\\\\c\\n\\u0001"));
  EXPECT_TRUE(full_match(compiled, "a\\\"b\\\\c\\n\\\""));
  EXPECT_TRUE(full_match(compiled, "a\\\"b\\\\c\\n\\t"));
  EXPECT_FALSE(full_match(compiled, "a\"b\\\\c\\n\\t"));     // raw quote
  EXPECT_FALSE(full_match(compiled, "a\\\"b\\\\c\n\\t"));    // raw newline
  EXPECT_FALSE(full_match(compiled, "a\\\"b\\\\c\\n\x01"));  // raw control
}

struct ErrorCase {
  std::string pattern;
  std::string expected;
};

TEST(grammar_regex, UnsupportedConstructsAreNamed) {
  const std::vector<ErrorCase> cases = {
      {"(a)\\1", "backreferences are not supported"},
      {"(?<n>a)\\k<n>", "backreferences are not supported"},
      {"(?P<n>a)(?P=n)", "backreferences are not supported"},
      {"a(?=b)", "lookahead is not supported"},
      {"a(?!b)", "lookahead is not supported"},
      {"(?<=a)b", "lookbehind is not supported"},
      {"(?<!a)b", "lookbehind is not supported"},
      {"\\bword\\b", "word boundaries are not supported"},
      {"(?>a)", "atomic groups are not supported"},
      {"a++", "possessive quantifiers are not supported"},
      {"(?i)abc", "inline flags"},
      {"\\p{L}", "Unicode properties"},
      {"[[:alpha:]]", "POSIX character classes"},
      {"a^b", "anchor '^' is only supported at the start"},
      {"(^a)", "anchor '^' is only supported at the start"},
      {"a$b", "anchor '$' is only supported at the end"},
      {"\\Aabc", "anchor '\\A' is not supported"},
      {"*a", "nothing to repeat"},
      {"a**", "a quantifier cannot follow another"},
      {"a{2}{3}", "a quantifier cannot follow another"},
      {"a{3,2}", "maximum is below the minimum"},
      {"a{1000000}", "repetition bound above"},
      {"a{,3}", "write {0,n}"},
      {"(ab", "unclosed '('"},
      {"ab)", "unbalanced ')'"},
      {"[ab", "unterminated character class"},
      {"[z-a]", "range is reversed"},
      {"[a-\\d]", "a class escape cannot end a range"},
      {"\\q", "unknown escape '\\q'"},
      {"\\x{110000}", "not a Unicode scalar value"},
      {"\\xZ", "malformed hex escape"},
      {"abc\\", "trailing backslash"},
      {"\xFF", "invalid UTF-8"},
      {std::string(200, '(') + "a" + std::string(200, ')'), "nested too deeply"},
  };
  for (const ErrorCase& c : cases) {
    auto g = regex_to_grammar(c.pattern);
    ASSERT_FALSE(g.ok()) << c.pattern;
    EXPECT_NE(g.status().message().find(c.expected), std::string::npos)
        << c.pattern << " -> " << g.status().message();
  }
}

TEST(grammar_regex, EmptySetMatchesNothing) {
  auto g = regex_to_grammar("[^\\x00-\\x{10FFFF}]");
  ASSERT_TRUE(g.ok());
  auto c = CompiledGrammar::compile(std::move(g).value(), nullptr);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("accepts no string"), std::string::npos);
}

}  // namespace
}  // namespace sgl::grammar
