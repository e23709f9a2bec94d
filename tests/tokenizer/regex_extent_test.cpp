// max_match_extent bounds, and StopRegexMatcher's windowed search against a search of the whole
// text after every piece, on random patterns and texts split at random.
#include "tokenizer/regex_extent.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/regex.h"
#include "tokenizer/stop_regex_matcher.h"
#include "tokenizer/unicode.h"

namespace sgl::tokenizer {
namespace {

TEST(RegexExtent, BoundsEachConstruct) {
  // Each atom counts 4 bytes (one code point); anchors that test a neighbour count 8.
  EXPECT_EQ(max_match_extent("stop"), 16u);
  EXPECT_EQ(max_match_extent("a{3}"), 12u);
  EXPECT_EQ(max_match_extent("a{2,5}?"), 20u);
  EXPECT_EQ(max_match_extent("a?b"), 8u);
  EXPECT_EQ(max_match_extent("(ab|c)d"), 12u);
  EXPECT_EQ(max_match_extent("(?:ab|cde){2}"), 24u);
  EXPECT_EQ(max_match_extent("(?P<n>x)[0-9\\]]."), 12u);
  EXPECT_EQ(max_match_extent("x(?=yz)"), 12u);    // a lookahead examines, not matches
  EXPECT_EQ(max_match_extent("x(?=yzw)a"), 16u);  // ... and may reach past the match
  EXPECT_EQ(max_match_extent("(?<=ab)x"), 8u);    // a lookbehind's content, at most from the start
  // ... which may hold a lookahead or $ that reads past the position.
  EXPECT_EQ(max_match_extent("x(?<=x(?=yzwvu))"), 28u);
  EXPECT_EQ(max_match_extent("(?<=a)(?<!$)"), 8u);
  EXPECT_EQ(max_match_extent("foo$"), 20u);  // $ looks at what follows
  EXPECT_EQ(max_match_extent("\\bend\\b"), 20u);
  EXPECT_EQ(max_match_extent("^(?i)\\d\\.\\x41\\x{263a}\\0"), 20u);
  EXPECT_EQ(max_match_extent("(?#note)caf\xc3\xa9"), 16u);
  EXPECT_EQ(max_match_extent(""), 0u);
  EXPECT_EQ(max_match_extent("a{0}"), 0u);
  // Unbounded or not analysed: the caller searches everything.
  for (const char* p : {"a*", "a+", "a{2,}", "(a)\\1", "(?P<n>a)(?P=n)", "(?x)a b", "a{,3}",
                        "a{ 2}", "[[:alpha:]]", "\\p{L}", "\\Qa\\E", "(?(1)a|b)", "(?R)", ")", "(",
                        "[a", "a{99999999999}", "(*UTF)a", "\\N", "{",
                        // A quantifier after a comment or flags repeats the atom before them.
                        "a(?#c){6}", "a(?i){2}", "a(?#c)*"}) {
    EXPECT_FALSE(max_match_extent(p).has_value()) << p;
  }
  EXPECT_FALSE(max_match_extent("(?:a{1000}){1000}").has_value());  // past the useful limit
  EXPECT_EQ(max_match_extent("(?:a{1000}){100}"), 400000u);
}

// Random patterns from pieces whose matches stay bounded, with the constructs whose reach goes
// past the match (lookaheads, lookbehinds holding them, $, \b) and comments before quantifiers.
std::string random_pattern(std::mt19937& rng, int depth = 0) {
  static const std::vector<std::string> atoms = {"a",
                                                 "b",
                                                 "c",
                                                 "\xc3\xa9",
                                                 "\xe2\x82\xac",
                                                 "\xf0\x9f\x98\x80",
                                                 ".",
                                                 "[ab]",
                                                 "[^a]",
                                                 "\\w",
                                                 "\\d",
                                                 "\\s",
                                                 " ",
                                                 "\\.",
                                                 "$",
                                                 "\\b",
                                                 "^"};
  std::string out;
  const int parts = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < parts; ++i) {
    const unsigned kind = rng() % 13;
    if (kind < 6 || depth >= 2) {
      out += atoms[rng() % atoms.size()];
    } else if (kind == 6) {
      out += "(?=" + random_pattern(rng, depth + 1) + ")";
    } else if (kind == 7) {
      out += "(?!" + random_pattern(rng, depth + 1) + ")";
    } else if (kind == 10) {  // PCRE2 refuses the variable-length ones (skipped below)
      out += "(?<=" + random_pattern(rng, depth + 1) + ")";
    } else if (kind == 11) {
      out += "(?<!" + random_pattern(rng, depth + 1) + ")";
    } else if (kind == 12) {
      out += rng() % 2 ? "(?#note)"
                       // A fixed-length lookbehind that reads past the position.
                       : "(?<" + std::string(rng() % 2 ? "=" : "!") + atoms[rng() % 6] +
                             "(?=" + random_pattern(rng, depth + 1) + "))";
    } else if (kind == 8) {
      out += "(" + random_pattern(rng, depth + 1) + "|" + random_pattern(rng, depth + 1) + ")";
    } else {
      out += "(?:" + random_pattern(rng, depth + 1) + ")";
    }
    const unsigned q = rng() % 6;
    if (q == 0) out += "?";
    if (q == 1) out += "{" + std::to_string(rng() % 3) + "}";
    if (q == 2) out += "{1," + std::to_string(1 + rng() % 3) + "}?";
  }
  return out;
}

std::string random_text(std::mt19937& rng, size_t chars) {
  static const std::vector<std::string> pieces = {
      "a", "b", "c", " ", ".", "1", "\n", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
  std::string out;
  for (size_t i = 0; i < chars; ++i) out += pieces[rng() % pieces.size()];
  return out;
}

// The first match of `regex` over the whole of `text`, as the matcher reported before windows.
std::optional<size_t> whole_text_match_end(const Regex& regex, const std::string& text) {
  Regex::Matches matches(regex, text);
  ByteRange range;
  if (!matches.next(range)) return std::nullopt;
  return range.end;
}

TEST(RegexExtent, WindowedStopRegexEqualsWholeTextSearch) {
  std::mt19937 rng(20261201);
  int compiled = 0, windowed = 0, matched_in_window = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const std::string pattern = random_pattern(rng);
    auto regex = Regex::compile(pattern, RegexSyntax::kPython);
    if (!regex.ok()) continue;  // a random pattern PCRE2 refuses (e.g. a quantified anchor)
    ++compiled;
    const std::optional<size_t> extent = max_match_extent(pattern);
    auto matcher = StopRegexMatcher::compile({pattern}).value();
    const std::string text = random_text(rng, 40);
    // Split at character boundaries into pieces of 1 to 4 characters.
    std::string seen;
    size_t i = 0;
    while (i < text.size()) {
      size_t end = i;
      for (unsigned c = 1 + rng() % 4; c > 0 && end < text.size(); --c) {
        end += unicode::utf8_sequence_length(static_cast<unsigned char>(text[end]));
      }
      const std::string piece = text.substr(i, end - i);
      i = end;
      const bool window = extent && seen.size() > *extent;  // a search that skips a prefix
      windowed += window;
      seen += piece;
      const std::optional<size_t> want = whole_text_match_end(*regex, seen);
      const auto got = matcher.add(piece);
      ASSERT_EQ(got.has_value(), want.has_value()) << "pattern " << pattern << " text " << seen;
      if (got) {
        EXPECT_EQ(got->end, *want) << "pattern " << pattern << " text " << seen;
        matched_in_window += window;
        break;  // generation stops at the first match
      }
    }
  }
  std::printf("%d patterns, %d windowed searches, %d matches found by one\n", compiled, windowed,
              matched_in_window);
  EXPECT_GT(windowed, 20000);         // the windows were exercised ...
  EXPECT_GT(matched_in_window, 800);  // ... and so were matches found inside them
}

}  // namespace
}  // namespace sgl::tokenizer
