// The plain-text shortcuts of the mask walk: the tokenizer-level PlainTokenSets equal a brute
// force over real vocabularies, the per-state PlainRuns hold what they promise when a stack
// engine actually steps plain strings, and masks at bounded-string positions over the
// Llama-3 vocabulary equal trying every token.
#include <gtest/gtest.h>

#include <filesystem>

#include "grammar/json_schema_compiler.h"
#include "grammar/plain_runs.h"
#include "grammar/stack_engine.h"
#include "grammar/utf8.h"
#include "grammar_test_util.h"
#include "llama3_vocab.h"
#include "test_paths.h"

namespace sgl::grammar {
namespace {

// Code points of `bytes` if they are plain text (printable ASCII but `"` and `\`, valid UTF-8
// whose last character may be cut), else -1. Written apart from PlainTokenSets: decodes with
// decode_utf8 and completes a cut tail by trying continuation bytes.
int32_t brute_force_plain_chars(const std::string& bytes) {
  for (char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    if (b < 0x20 || b == 0x7F || b == '"' || b == '\\') return -1;
  }
  int32_t chars = 0;
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (decode_utf8(bytes, pos) < 0) break;
    ++chars;
  }
  if (pos == bytes.size()) return chars;
  const std::string tail = bytes.substr(pos);
  if (tail.size() > 3) return -1;
  for (uint8_t a : {0x80, 0x90, 0xA0}) {
    for (size_t extra = 1; extra + tail.size() <= 4; ++extra) {
      std::string full = tail + std::string(extra, static_cast<char>(0x80));
      full[tail.size()] = static_cast<char>(a);
      size_t p = 0;
      if (decode_utf8(full, p) >= 0 && p == full.size()) return chars + 1;
    }
  }
  return -1;
}

TEST(grammar_plain_token_sets, EqualBruteForceOverRealVocabularies) {
  int tested = 0;
  for (const char* name : {"llama3_1", "qwen3", "gpt2"}) {
    const std::string dir = sgl::test::testdata_dir().string() + "/tokenizers/" + name;
    if (!std::filesystem::exists(dir)) continue;
    const auto info = test::load_llama3_vocab(dir);
    ASSERT_NE(info, nullptr) << dir;
    const PlainTokenSets& sets = info->plain_tokens();
    std::vector<int32_t> chars(info->num_tokens(), -1);
    int32_t longest = 0;
    for (int32_t id = 0; id < info->num_tokens(); ++id) {
      if (info->is_regular(id)) chars[id] = brute_force_plain_chars(info->token_bytes(id));
      longest = std::max(longest, chars[id]);
    }
    ASSERT_EQ(sets.longest(), longest) << name;
    for (int32_t k : {0, 1, 2, 3, 7, longest}) {
      const auto bits = sets.at_most(k);
      ASSERT_EQ(static_cast<int32_t>(bits.size()), info->bitmask_words());
      int32_t count = 0;
      for (int32_t id = 0; id < info->vocab_size(); ++id) {
        const bool expected = id < info->num_tokens() && chars[id] > 0 && chars[id] <= k;
        ASSERT_EQ(((bits[id >> 5] >> (id & 31)) & 1) != 0, expected)
            << name << " k " << k << " id " << id;
        count += expected;
      }
      EXPECT_EQ(sets.count_at_most(k), count) << name << " k " << k;
    }
    ++tested;
  }
  if (tested == 0) GTEST_SKIP() << "no tokenizers under " << sgl::test::testdata_dir();
}

// Plain strings of exactly n characters over a sample alphabet; with `cut`, the last one is a
// proper prefix of a multibyte character.
std::vector<std::string> plain_strings(int n, bool cut) {
  const std::vector<std::string> alphabet = {
      "a", "Z", " ", "~", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"};
  const std::vector<std::string> cuts = {"\xC3", "\xE2\x82", "\xF0\x9F\x98"};
  std::vector<std::string> out = {""};
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> next;
    const bool last = i == n - 1;
    for (const std::string& s : out) {
      for (const std::string& c : last&& cut ? cuts : alphabet) next.push_back(s + c);
    }
    out = std::move(next);
  }
  return out;
}

TEST(grammar_plain_runs, RunsAndExactnessHoldWhenStepping) {
  const char* schema = R"({"type": "object", "properties": {
      "a": {"type": "string", "maxLength": 5}, "b": {"type": "string", "minLength": 2,
      "maxLength": 3}, "c": {"type": "string"}, "d": {"type": "string", "pattern": "^[a-z]{1,3}$"}},
      "required": ["a", "b", "c", "d"]})";
  auto g = test::must_compile(*json_schema_to_grammar(schema));
  const GrammarAutomaton& a = g->automaton();
  const PlainRuns runs(a);
  bool saw_bounded = false, saw_loop = false;
  for (StateId s = 0; s < a.num_states(); ++s) {
    if (a.byte_edges(s).empty()) continue;
    const int32_t run = runs.run(s);
    saw_bounded |= run == 5 && runs.exact(s);
    saw_loop |= run == PlainRuns::kUnbounded;
    // Every plain string within the run keeps a set with the frame's successor alive.
    for (int n = 1; n <= std::min(run, 3); ++n) {
      for (bool cut : {false, true}) {
        for (const std::string& text : plain_strings(n, cut)) {
          StackEngine engine(a);
          SetId set = engine.singleton(engine.frame(s, kBottom));
          for (char c : text) {
            set = engine.step(set, static_cast<uint8_t>(c));
            ASSERT_NE(set, StackEngine::kDeadSet) << "state " << s << " run " << run;
            ASSERT_FALSE(engine.frames(set).empty());
          }
        }
      }
    }
    if (!runs.exact(s) || run > 3) continue;
    // Exact: one more character (or its prefix) kills the set, without popping the rule.
    for (bool cut : {false, true}) {
      for (const std::string& text : plain_strings(run + 1, cut)) {
        StackEngine engine(a);
        SetId set = engine.singleton(engine.frame(s, kBottom));
        for (char c : text) {
          set = engine.step(set, static_cast<uint8_t>(c));
          if (set == StackEngine::kDeadSet) break;
          ASSERT_FALSE(engine.reached_bottom(set)) << "state " << s;
          ASSERT_FALSE(engine.can_accept(set));
        }
        ASSERT_EQ(set, StackEngine::kDeadSet) << "state " << s << " run " << run << " " << text;
      }
    }
  }
  EXPECT_TRUE(saw_bounded);
  EXPECT_TRUE(saw_loop);
}

TEST(grammar_plain_runs, MasksInBoundedStringsEqualEveryTokenTriedWithLlama3) {
  const auto info = test::load_llama3_vocab();
  if (info == nullptr) GTEST_SKIP() << "no Llama-3.1 tokenizer under " << sgl::test::testdata_dir();
  const char* schema = R"({"type": "object", "properties": {
      "a": {"type": "string", "maxLength": 6}, "b": {"type": "string", "minLength": 2,
      "maxLength": 40}}, "required": ["a", "b"]})";
  auto g = test::must_compile(*json_schema_to_grammar(schema), info);
  // Positions at the start, inside, near and at the end of each bounded string.
  for (const char* prefix : {"{\"a\":\"", "{\"a\":\"x\xC3\xA9", "{\"a\":\"abcde", "{\"a\":\"abcdef",
                             "{\"a\":\"\",\"b\":\"", "{\"a\":\"\",\"b\":\"0123456789012345678"}) {
    test::expect_mask_is_brute_force(g, *info, prefix);
  }
}

}  // namespace
}  // namespace sgl::grammar
