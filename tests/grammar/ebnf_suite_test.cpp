// The EBNF suite (data/ebnf/*.ebnf: arithmetic, JSON, CSV, a small programming language, a
// GBNF-style tool-call grammar): accepted / rejected samples for each, and property tests
// against independent reference checkers: random walks are in the language (JSON: nlohmann;
// CSV: PCRE2 with the equivalent regex; arithmetic: a hand-written checker), and for CSV and
// arithmetic every prefix of random and mutated strings is accepted exactly when the reference
// says some string of the language starts with it.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "grammar/ebnf_parser.h"
#include "grammar_test_util.h"
#include "pcre2_reference.h"
#include "test_paths.h"

namespace sgl::grammar {
namespace {

std::shared_ptr<const CompiledGrammar> load(const std::string& name) {
  std::ifstream in(sgl::test::test_data_dir("grammar").string() + "/ebnf/" + name + ".ebnf");
  std::stringstream text;
  text << in.rdbuf();
  auto g = parse_ebnf(text.str());
  if (!g.ok()) throw std::runtime_error(name + ": " + g.status().to_string());
  return test::must_compile(std::move(g).value());
}

struct Samples {
  std::string grammar;
  std::vector<std::string> accept, reject;
};

TEST(grammar_ebnf_suite, Samples) {
  const std::vector<Samples> table = {
      {"arithmetic",
       {"1", "1+2*3", "(1+2)*3", "-(4.5/-2)", "((((7))))", "10-2-3", "2*-3"},
       {"", "1+", "(1", "1)", "1..2", "+1", "1 + 2", "()", "1.", "*2"}},
      {"json",
       {"{}", "[]", "0", "-1.5e+10", " {\"a\" : [1, true, null, \"x\\u00e9\\n\"]} ",
        "\"\\ud83d\\ude00\"", "{\"k\":{\"k\":{\"k\":[[[]]]}}}", "\"caf\xC3\xA9\""},
       {"", "{", "[1,]", "{\"a\"}", "01", "1.", "\"\\x\"", "\"\\ud800\"", "tru", "\"a\nb\"",
        "{\"a\":1,}", "[1 2]"}},
      {"csv",
       {"a,b,c", "a,b\n1,2\n", "\"x,y\",\"he said \"\"hi\"\"\"\r\n3,4", ",,", ""},
       {"\"unterminated", "a\"b", "\"x\"y", "a\r\rb"}},
      {"minilang",
       {"let x = 1;",
        "let y = f(x, 2) * (3 + -x);\nif (y > 2 && !done) { y = y - 1; } else { return y; }",
        "while (i < 10) { i = i + 1; print(\"i\", i); }", "// note\nreturn;", ""},
       {"let 1 = 2;", "let x = ;", "if x { }", "while (1) x = 2;", "return 1", "let x = 1",
        "f(1,);"}},
      {"tool_call",
       {"Sure, here you go.",
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>",
        "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"x\": -3.25, \"exact\": "
        "true}}\n</tool_call>",
        "<tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>"},
       {"", "<tool_call>{\"name\": \"delete_all\", \"arguments\": {}}</tool_call>",
        "<tool_call>{\"name\": \"search\"}</tool_call>", "<b>hi</b>",
        "<tool_call>{\"name\": \"search\", \"arguments\": {\"Q\": 1}}</tool_call>"}},
  };
  for (const Samples& s : table) {
    SCOPED_TRACE(s.grammar);
    auto g = load(s.grammar);
    for (const std::string& t : s.accept) EXPECT_TRUE(test::full_match(g, t)) << t;
    for (const std::string& t : s.reject) EXPECT_FALSE(test::full_match(g, t)) << t;
  }
}

// Reference for arithmetic.ebnf: scans a string and says whether some expression starts with
// it (`viable`) and whether it is one (`complete`).
struct ArithmeticReference {
  bool viable = true;
  bool complete = false;
  explicit ArithmeticReference(const std::string& s) {
    enum { kOperand, kInt, kDot, kFrac, kAfter } st = kOperand;  // kOperand: an operand is next
    int depth = 0;
    for (char c : s) {
      const bool digit = c >= '0' && c <= '9';
      switch (st) {
        case kOperand:
          if (digit) {
            st = kInt;
          } else if (c == '(') {
            ++depth;
          } else if (c != '-') {
            viable = false;
          }
          break;
        case kInt:
        case kFrac:
        case kAfter:
          if (digit && st != kAfter) break;
          if (c == '.' && st == kInt) {
            st = kDot;
          } else if (c == '+' || c == '-' || c == '*' || c == '/') {
            st = kOperand;
          } else if (c == ')' && depth > 0) {
            --depth;
            st = kAfter;
          } else {
            viable = false;
          }
          break;
        case kDot:
          if (digit) {
            st = kFrac;
          } else {
            viable = false;
          }
          break;
      }
      if (!viable) return;
    }
    complete = (st == kInt || st == kFrac || st == kAfter) && depth == 0;
  }
};

// Every prefix of `t` (at character boundaries) is alive in the matcher exactly when
// `viable(prefix)`; the whole is accepted exactly when `complete(t)`.
template <typename Viable, typename Complete>
int check_prefixes(const std::shared_ptr<const CompiledGrammar>& g, const std::string& t,
                   Viable viable, Complete complete) {
  GrammarMatcher m(g);
  bool alive = true;
  int checked = 0;
  for (size_t i = 1; i <= t.size() && alive; ++i) {
    alive = m.accept_bytes(t.substr(i - 1, 1));
    if (i < t.size() && (static_cast<unsigned char>(t[i]) & 0xC0) == 0x80) continue;
    EXPECT_EQ(alive, viable(t.substr(0, i))) << "prefix: " << t.substr(0, i);
    ++checked;
  }
  EXPECT_EQ(alive && m.can_terminate(), complete(t)) << "whole: " << t;
  return checked;
}

TEST(grammar_ebnf_suite, ArithmeticPrefixesAgreeWithReference) {
  auto g = load("arithmetic");
  std::mt19937 rng(3);
  const std::string alphabet = "0123456789.+-*/()";
  int checked = 0;
  auto viable = [](const std::string& p) { return ArithmeticReference(p).viable; };
  auto complete = [](const std::string& p) { return ArithmeticReference(p).complete; };
  for (int i = 0; i < 3000; ++i) {
    std::string t;
    if (i % 2 == 0) {
      ASSERT_TRUE(test::random_walk(g, rng, t, 12, 0.1));
      EXPECT_TRUE(complete(t)) << t;
      if (!t.empty()) t[rng() % t.size()] = alphabet[rng() % alphabet.size()];
    } else {
      for (size_t k = 1 + rng() % 10; k > 0; --k) t += alphabet[rng() % alphabet.size()];
    }
    checked += check_prefixes(g, t, viable, complete);
  }
  EXPECT_GT(checked, 15000);
}

TEST(grammar_ebnf_suite, CsvPrefixesAgreeWithPcre2) {
  auto g = load("csv");
  const test::Pcre2Reference pcre(
      R"re(("([^"]|"")*"|[^,"\r\n]*)(,("([^"]|"")*"|[^,"\r\n]*))*(\r?\n("([^"]|"")*"|[^,"\r\n]*)(,("([^"]|"")*"|[^,"\r\n]*))*)*(\r?\n)?)re");
  std::mt19937 rng(4);
  const std::string alphabet = "ab,\"\r\n \xC3\xA9";
  auto viable = [&](const std::string& p) { return pcre.is_prefix(p); };
  auto complete = [&](const std::string& p) { return pcre.full_match(p); };
  int checked = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string t;
    if (i % 2 == 0) {
      ASSERT_TRUE(test::random_walk(g, rng, t, 16, 0.1));
      EXPECT_TRUE(!test::valid_utf8(t) || complete(t)) << t;
      if (!t.empty()) t[rng() % t.size()] = alphabet[rng() % alphabet.size()];
    } else {
      for (size_t k = 1 + rng() % 10; k > 0; --k) t += alphabet[rng() % alphabet.size()];
    }
    if (!test::valid_utf8(t)) continue;
    checked += check_prefixes(g, t, viable, complete);
  }
  EXPECT_GT(checked, 3000);
}

TEST(grammar_ebnf_suite, JsonWalksParseWithNlohmann) {
  auto g = load("json");
  std::mt19937 rng(5);
  for (int i = 0; i < 400; ++i) {
    std::string t;
    ASSERT_TRUE(test::random_walk(g, rng, t, 40, 0.05)) << "stuck at: " << t;
    EXPECT_TRUE(nlohmann::json::accept(t)) << t;
  }
}

TEST(grammar_ebnf_suite, WalksOfEveryGrammarAreAccepted) {
  // Each walk's bytes, fed again in one piece, are accepted and can end.
  std::mt19937 rng(6);
  for (const char* name : {"arithmetic", "json", "csv", "minilang", "tool_call"}) {
    SCOPED_TRACE(name);
    auto g = load(name);
    for (int i = 0; i < 100; ++i) {
      std::string t;
      if (!test::random_walk(g, rng, t, 40, 0.05)) continue;
      EXPECT_TRUE(test::full_match(g, t)) << t;
    }
  }
}

}  // namespace
}  // namespace sgl::grammar
