// Streaming detokenization: token-by-token text equals the whole decode and is valid UTF-8 at
// every step, for every vector string of every tokenizer; stop strings across pieces.
#include "tokenizer/incremental_detokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "test_paths.h"
#include "tokenizer/stop_regex_matcher.h"
#include "tokenizer/tokenizer.h"

namespace sgl::tokenizer {
namespace {

const std::string kData = sgl::test::testdata_dir().string();

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (int k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    }
    i += n;
  }
  return true;
}

std::vector<std::string> vector_strings(const std::string& name) {
  std::ifstream in(kData + "/tokenizers/vectors/" + name + ".inp", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str(), sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t at; (at = all.find(sep, start)) != std::string::npos; start = at + sep.size()) {
    out.push_back(all.substr(start, at - start));
  }
  return out;
}

struct Case {
  const char* tokenizer_dir;
  const char* vectors;
};

class Streaming : public ::testing::TestWithParam<Case> {};

TEST_P(Streaming, TokenByTokenEqualsWholeDecode) {
  auto tok = Tokenizer::from_dir(kData + "/" + GetParam().tokenizer_dir);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  std::vector<std::string> texts = vector_strings(GetParam().vectors);
  // Plus random byte-fallback / multi-byte heavy strings.
  std::mt19937 rng(5);
  const std::vector<std::string> pieces = {
      "é", "漢字", "🦙", "👩‍👩‍👧", " ", "  ", "a", "\n", "ё", "ω"};
  for (int i = 0; i < 200; ++i) {
    std::string s;
    for (int k = 0; k < 12; ++k) s += pieces[rng() % pieces.size()];
    texts.push_back(s);
  }
  ASSERT_GT(texts.size(), 200u);
  for (const std::string& text : texts) {
    const std::vector<int32_t> ids = (*tok)->encode(text, {.add_special_tokens = false});
    // Prompt context: the first two tokens; stream the rest one at a time.
    const size_t split = std::min<size_t>(2, ids.size());
    const std::vector<int32_t> prompt(ids.begin(), ids.begin() + split);
    IncrementalDetokenizer detok(**tok, prompt);
    for (size_t i = split; i < ids.size(); ++i) {
      const std::string piece = detok.add({ids[i]});
      ASSERT_TRUE(valid_utf8(piece)) << "invalid UTF-8 piece while streaming '" << text << "'";
    }
    detok.flush();
    EXPECT_EQ(detok.emitted(), detok.full_text()) << "text: '" << text << "'";
    if (split == 0) {
      EXPECT_EQ(detok.emitted(), (*tok)->decode(ids, {})) << "text: '" << text << "'";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, Streaming,
                         ::testing::Values(Case{"models/stories260K", "llama-spm"},
                                           Case{"tokenizers/llama2", "llama-spm"},
                                           Case{"tokenizers/llama3_1", "llama-bpe"},
                                           Case{"tokenizers/qwen3", "qwen2"},
                                           Case{"tokenizers/gpt2", "gpt-2"}),
                         [](const auto& info) {
                           std::string n = info.param.tokenizer_dir;
                           return n.substr(n.find('/') + 1);
                         });

// Where the decoder renders a window's ids differently once more ids follow (a stray byte turns a
// byte-fallback run into U+FFFDs; a prompt cut mid-character), the stream goes on past as many
// characters as the window had (SGLang's slice) instead of stalling until the end and then
// emitting the whole window again (the prompt's text included).
TEST(Streaming, ReRenderedWindowsDoNotStallOrRepeat) {
  auto tok = Tokenizer::from_dir(kData + "/tokenizers/llama2");
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const auto id = [&](const char* t) { return (*tok)->token_to_id(t).value(); };
  IncrementalDetokenizer d(**tok, {id("\u2581Hello")});
  std::string pieces;
  for (const char* b : {"<0xF0>", "<0x9F>", "<0xA6>", "<0x99>"}) pieces += d.add({id(b)});
  EXPECT_EQ(pieces, "\U0001F999");       // the llama emoji, whole
  EXPECT_EQ(d.add({id("<0xF0>")}), "");  // a partial character waits
  const std::string hi = d.add({id("\u2581hi")});
  EXPECT_TRUE(hi.ends_with(" hi")) << hi;  // was "": stalled
  EXPECT_EQ(d.add({id("\u2581there")}), " there");
  d.flush();
  EXPECT_TRUE(d.emitted().ends_with(" hi there")) << d.emitted();
  EXPECT_EQ(d.emitted().find(" hi"), d.emitted().rfind(" hi")) << d.emitted();  // not repeated

  IncrementalDetokenizer cut(**tok, {id("\u2581Hi"), id("<0xE4>"), id("<0xBD>")});
  std::string streamed = cut.add({id("<0xA0>")});
  streamed += cut.add({id("\u2581world")});
  streamed += cut.flush();
  EXPECT_EQ(streamed, cut.emitted());
  EXPECT_TRUE(cut.emitted().ends_with(" world")) << cut.emitted();
  EXPECT_EQ(cut.emitted().find("Hi"), std::string::npos) << cut.emitted();  // no prompt text
}

TEST(Decode, SpacesBetweenSpecialTokens) {
  auto tok = Tokenizer::from_dir(kData + "/tokenizers/qwen3");
  ASSERT_TRUE(tok.ok());
  const std::vector<int32_t> ids =
      (*tok)->encode("<|im_start|>user\nHi<|im_end|>", {.add_special_tokens = false});
  DecodeOptions keep{.skip_special_tokens = false};
  EXPECT_EQ((*tok)->decode(ids, keep), "<|im_start|>user\nHi<|im_end|>");
  keep.spaces_between_special_tokens = true;
  EXPECT_EQ((*tok)->decode(ids, keep), "<|im_start|> user\nHi <|im_end|>");
  EXPECT_EQ((*tok)->decode(ids, {}), "user\nHi");  // skipped: the option does nothing
}

TEST(StopStringMatcher, MatchesAcrossPiecesAndHoldsBackPartialMatches) {
  StopStringMatcher m({"\n\nUser:", "END"});
  auto r = m.add("Hello\n");
  EXPECT_EQ(r.text, "Hello");  // "\n" may start "\n\nUser:"
  EXPECT_FALSE(r.matched);
  r = m.add("\nUs");
  EXPECT_EQ(r.text, "");
  r = m.add("er: hi");
  EXPECT_TRUE(r.matched);
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.matched_str, "\n\nUser:");

  StopStringMatcher n({"END"});
  EXPECT_EQ(n.add("the EN").text, "the ");
  EXPECT_EQ(n.add("D").matched, true);
  StopStringMatcher o({"END"});
  EXPECT_EQ(o.add("EN").text, "");
  EXPECT_EQ(o.add("Dless? no, ENS").text, "");  // matched at "END"
  StopStringMatcher p({"xyz"});
  EXPECT_EQ(p.add("ab").text, "ab");
  EXPECT_EQ(p.add("cx").text, "c");
  EXPECT_EQ(p.flush(), "x");
}

// no_stop_trim: the text ends with the stop string, and what followed it in the piece is
// dropped all the same.
TEST(StopStringMatcher, KeepMatchEndsTheTextWithTheStopString) {
  StopStringMatcher m({"END", "\n\nUser:"}, /*keep_match=*/true);
  EXPECT_EQ(m.add("the EN").text, "the ");
  const auto r = m.add("D and more");
  EXPECT_TRUE(r.matched);
  EXPECT_EQ(r.text, "END");
  EXPECT_EQ(r.matched_str, "END");
  StopStringMatcher n({"bcd", "ab"}, /*keep_match=*/true);
  EXPECT_EQ(n.add("xabcde").text, "xab");  // the match that starts first wins
}

TEST(StopRegexMatcher, MatchesOverTheWholeTextAcrossPieces) {
  auto m = StopRegexMatcher::compile({"l+i", "[0-9]{3}"});
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_FALSE(m->add("a ").has_value());
  const auto li = m->add("little");
  ASSERT_TRUE(li.has_value());
  EXPECT_EQ(li->end, std::string("a li").size());
  EXPECT_EQ(li->pattern, "l+i");
  EXPECT_FALSE(StopRegexMatcher().add("anything").has_value());  // no patterns

  auto digits = StopRegexMatcher::compile({"[0-9]{3}"}).value();
  EXPECT_FALSE(digits.add("code 1").has_value());
  EXPECT_FALSE(digits.add("2").has_value());
  const auto hit = digits.add("34 end");  // "123" spans three pieces
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->end, std::string("code 123").size());
  EXPECT_EQ(hit->pattern, "[0-9]{3}");
  EXPECT_EQ(digits.text(), "code 1234 end");

  // Two patterns: the match that ends first wins, whichever pattern is listed first.
  auto two = StopRegexMatcher::compile({"girl", "lit+"}).value();
  const auto first = two.add("a little girl");
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->pattern, "lit+");
  EXPECT_EQ(first->end, std::string("a litt").size());
}

// Python's `re`: ^ and $ at the text's ends only (no MULTILINE), \w over Unicode letters.
TEST(StopRegexMatcher, PythonSyntax) {
  auto caret = StopRegexMatcher::compile({"^She"}).value();
  EXPECT_FALSE(caret.add("Once.\nShe ran").has_value());
  auto dollar = StopRegexMatcher::compile({"ran$"}).value();
  EXPECT_FALSE(dollar.add("ran\nthen").has_value());
  EXPECT_TRUE(dollar.add(" ran").has_value());
  auto word = StopRegexMatcher::compile({"\\w{3}!"}).value();
  EXPECT_TRUE(word.add("caf\xc3\xa9!").has_value());  // é is a word character
  // Catastrophic backtracking stops at the limit (no match) instead of running for ages; the
  // other patterns still match.
  auto nested = StopRegexMatcher::compile({"(a+)+$", "stop"}).value();
  EXPECT_FALSE(nested.add(std::string(64, 'a') + "b").has_value());
  EXPECT_TRUE(nested.add(" stop").has_value());
  const auto bad = StopRegexMatcher::compile({"ok", "(unclosed"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("(unclosed"), std::string::npos);
}

}  // namespace
}  // namespace sgl::tokenizer
