// The regex suite (data/regexes.txt) against PCRE2: strings generated from our automaton fully
// match under PCRE2; on generated strings, their mutations and random strings our verdict equals
// PCRE2's; and, as a property, at every character boundary of every probe our matcher still
// accepts the prefix exactly when PCRE2 (partial matching) says some match starts with it, so
// every accepted string is in the language and every rejected prefix begins none of it.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "grammar/regex_compiler.h"
#include "grammar_test_util.h"
#include "pcre2_reference.h"
#include "test_paths.h"

namespace sgl::grammar {
namespace {

std::vector<std::string> load_patterns() {
  std::ifstream in(sgl::test::test_data_dir("grammar").string() + "/regexes.txt");
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') out.push_back(line);
  }
  return out;
}

// Mutations of s: a byte dropped, a byte inserted, s doubled, a byte replaced.
std::string mutate(const std::string& s, std::mt19937& rng, const std::string& alphabet) {
  std::string t = s;
  const size_t at = rng() % (s.size() + 1);
  switch (rng() % 4) {
    case 0:
      if (at < t.size()) t.erase(at, 1);
      break;
    case 1:
      t.insert(at, 1, alphabet[rng() % alphabet.size()]);
      break;
    case 2:
      t += s;
      break;
    default:
      if (at < t.size()) t[at] = alphabet[rng() % alphabet.size()];
  }
  return t;
}

TEST(grammar_regex_suite, AgreesWithPcre2OnStringsAndPrefixes) {
  const std::vector<std::string> patterns = load_patterns();
  ASSERT_GE(patterns.size(), 50u);
  std::mt19937 rng(2026);
  const std::string alphabet = "aAzZ09_-.:/@ \n\"\\{}[]()$,#*x\xC3\xA9";
  int strings = 0, prefixes = 0, walks = 0, stuck = 0;
  for (const std::string& pattern : patterns) {
    SCOPED_TRACE(pattern);
    auto g = regex_to_grammar(pattern);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    auto compiled = test::must_compile(std::move(g).value());
    const test::Pcre2Reference pcre(pattern);
    std::vector<std::string> probes;
    for (int i = 0; i < 25; ++i) {
      std::string s;
      ++walks;
      // The walk's steering to an end is generic (closing punctuation first); a language
      // whose way out is a letter can leave it wandering: counted, not checked.
      if (!test::random_walk(compiled, rng, s, 24, 0.1)) {
        ++stuck;
        continue;
      }
      EXPECT_TRUE(pcre.full_match(s)) << "generated: " << s;
      probes.push_back(s);
      probes.push_back(mutate(s, rng, alphabet));
    }
    for (int i = 0; i < 25; ++i) {
      std::string t;
      for (size_t k = rng() % 8; k > 0; --k) t += alphabet[rng() % alphabet.size()];
      probes.push_back(t);
    }
    for (const std::string& t : probes) {
      if (!test::valid_utf8(t)) continue;
      EXPECT_EQ(test::full_match(compiled, t), pcre.full_match(t)) << "probe: " << t;
      ++strings;
      // Byte by byte; compared at character boundaries (PCRE2 works on whole characters).
      GrammarMatcher m(compiled);
      bool alive = true;
      for (size_t i = 0; i <= t.size(); ++i) {
        if (i > 0 && alive) alive = m.accept_bytes(t.substr(i - 1, 1));
        if (i < t.size() && (static_cast<unsigned char>(t[i]) & 0xC0) == 0x80) continue;
        if (i == 0) continue;  // PCRE2 gives no partial match on an empty subject
        EXPECT_EQ(alive, pcre.is_prefix(t.substr(0, i))) << "prefix: " << t.substr(0, i);
        ++prefixes;
        if (!alive) break;  // past a rejected prefix every longer one is rejected too
      }
    }
  }
  EXPECT_LT(stuck, walks / 20);
  EXPECT_GT(strings, 3000);
  EXPECT_GT(prefixes, 15000);
}

}  // namespace
}  // namespace sgl::grammar
