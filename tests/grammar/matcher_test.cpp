// The token-level matcher over a synthetic vocabulary: bitmasks equal brute force on random
// states, rollback restores the state exactly, accepted token strings are accepted whole,
// rejected prefixes stay rejected, stop / special tokens, compaction, concurrent use of one
// compiled grammar, and the GrammarCompiler's cache.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <thread>

#include "grammar/ebnf_parser.h"
#include "grammar/grammar_compiler.h"
#include "grammar/json_schema_compiler.h"
#include "grammar/regex_compiler.h"
#include "grammar_test_util.h"
#include "json_schemas.h"

namespace sgl::grammar {
namespace {

constexpr int32_t kEos = 0;
constexpr int32_t kSpecial = 1;

// Every single byte, JSON-ish fragments, partial UTF-8 sequences and random strings; id 0 is
// the stop token, id 1 a special token, and the vocab size is padded past the tokens.
std::shared_ptr<const TokenizerInfo> synthetic_vocab() {
  std::vector<std::string> tokens = {"</s>", "<|special|>"};
  for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t :
       {"{\"",  "\":",    "\",",   "\"}",  "\"]",  "},",       "}}",       "]}",     "[{",
        "true", "false",  "null",  "12",   "345",  "0.",       "-1",       "e+",     " \"",
        ": ",   ", ",     "\n",    "\n  ", "  ",   "name",     "\"name\"", "age",    "id",
        "\\n",  "\\\"",   "\\u00", "\xC3", "\xA9", "\xC3\xA9", "\xE2\x82", "\xAC\"", "\xF0\x9F\x98",
        "\x80", "abc",    "ab",    "a",    "@",    ".com",     "-0",       "2024-",  "01",
        "T1",   ":00Z\"", "\"}]}", "tr",   "ue",   "nu",       "ll",       "\":\"",  "\"\"",
        "[]",   "{}",     "-",     "+"}) {
    tokens.push_back(t);
  }
  std::mt19937 rng(99);
  const std::string alphabet = "abcxyz019\"{}[],: .-\\\n";
  for (int i = 0; i < 1500; ++i) {
    std::string t;
    const int len = 2 + static_cast<int>(rng() % 5);
    for (int k = 0; k < len; ++k) t += alphabet[rng() % alphabet.size()];
    tokens.push_back(t);
  }
  tokens.push_back("abc");  // a duplicate of an earlier token's bytes
  tokens.push_back("");     // no bytes: never allowed
  const auto n = static_cast<int32_t>(tokens.size());
  auto info = TokenizerInfo::create(std::move(tokens), n + 45, {kEos}, {kSpecial});
  if (!info.ok()) throw std::runtime_error(info.status().to_string());
  return std::make_shared<const TokenizerInfo>(std::move(info).value());
}

const std::shared_ptr<const TokenizerInfo>& vocab() {
  static const auto kVocab = synthetic_vocab();
  return kVocab;
}

bool bit(const std::vector<uint32_t>& mask, int32_t id) { return (mask[id >> 5] >> (id & 31)) & 1; }

// The mask by trying every token on the matcher itself.
std::vector<uint32_t> brute_force_mask(GrammarMatcher& m) {
  std::vector<uint32_t> mask(m.bitmask_words(), 0);
  for (int32_t id = 0; id < vocab()->num_tokens(); ++id) {
    if (m.accept_token(id)) {
      mask[id >> 5] |= 1u << (id & 31);
      m.rollback(1);
    }
  }
  return mask;
}

std::vector<std::shared_ptr<const CompiledGrammar>> test_grammars() {
  std::vector<std::shared_ptr<const CompiledGrammar>> out;
  const std::vector<std::string> schemas = {test::schema_corpus()[9],  test::schema_corpus()[16],
                                            test::schema_corpus()[27], test::schema_corpus()[50],
                                            test::schema_corpus()[53], test::schema_corpus()[69]};
  for (const std::string& s : schemas) {
    JsonSchemaOptions options;
    options.whitespace = out.size() % 2 ? JsonWhitespace::kFlexible : JsonWhitespace::kCompact;
    out.push_back(test::must_compile(*json_schema_to_grammar(s, options), vocab()));
  }
  // Bounded strings: the walk's exact plain-text runs (PlainRuns::exact).
  out.push_back(test::must_compile(
      *json_schema_to_grammar(R"({"type": "array", "items": {"type": "object", "properties": {
          "a": {"type": "string", "maxLength": 4}, "b": {"type": "string", "minLength": 2,
          "maxLength": 3}}, "required": ["a", "b"]}})"),
      vocab()));
  out.push_back(test::must_compile(any_json_object_grammar(), vocab()));
  out.push_back(
      test::must_compile(*parse_ebnf(R"g(root ::= "(" root ")" | [a-c]+ | "\u00e9")g"), vocab()));
  out.push_back(test::must_compile(*regex_to_grammar("[a-z]{2,5}(\\.com|@x)?\\d*"), vocab()));
  return out;
}

std::vector<int32_t> allowed_ids(const std::vector<uint32_t>& mask) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < vocab()->num_tokens(); ++id) {
    if (bit(mask, id)) ids.push_back(id);
  }
  return ids;
}

TEST(grammar_matcher, BitmaskEqualsBruteForceOnRandomStates) {
  std::mt19937 rng(5);
  int states = 0;
  for (const auto& g : test_grammars()) {
    for (int walk = 0; walk < 6; ++walk) {
      GrammarMatcher m(g);
      for (int step = 0; step < 40; ++step) {
        std::vector<uint32_t> mask(m.bitmask_words(), 0xDEADBEEF);
        m.fill_next_token_bitmask(mask.data());
        const std::vector<uint32_t> expected = brute_force_mask(m);
        ASSERT_EQ(mask, expected) << g->grammar().to_string() << " at step " << step;
        ASSERT_EQ(bit(mask, kEos), m.can_terminate());
        ASSERT_FALSE(bit(mask, kSpecial));
        for (int32_t id = vocab()->num_tokens(); id < vocab()->vocab_size(); ++id) {
          ASSERT_FALSE(bit(mask, id));
        }
        ++states;
        const std::vector<int32_t> ids = allowed_ids(mask);
        ASSERT_FALSE(ids.empty());
        const int32_t pick = ids[rng() % ids.size()];
        ASSERT_TRUE(m.accept_token(pick));
        if (m.is_terminated()) break;
      }
    }
  }
  EXPECT_GT(states, 1000);
}

TEST(grammar_matcher, RollbackRestoresTheStateExactly) {
  std::mt19937 rng(6);
  for (const auto& g : test_grammars()) {
    GrammarMatcher m(g);
    std::vector<std::vector<uint32_t>> masks;
    std::vector<bool> can_end;
    for (int step = 0; step < 30; ++step) {
      std::vector<uint32_t> mask(m.bitmask_words());
      m.fill_next_token_bitmask(mask.data());
      masks.push_back(mask);
      can_end.push_back(m.can_terminate());
      std::vector<int32_t> ids = allowed_ids(mask);
      ids.erase(std::remove(ids.begin(), ids.end(), kEos), ids.end());
      if (ids.empty()) break;
      ASSERT_TRUE(m.accept_token(ids[rng() % ids.size()]));
    }
    if (static_cast<int32_t>(masks.size()) == m.num_steps()) {
      std::vector<uint32_t> mask(m.bitmask_words());
      m.fill_next_token_bitmask(mask.data());
      masks.push_back(mask);
      can_end.push_back(m.can_terminate());
    }
    // Roll back to random earlier points (the last state is masks.size() - 1 steps in).
    int32_t at = static_cast<int32_t>(masks.size()) - 1;
    ASSERT_EQ(m.num_steps(), at);
    while (at > 0) {
      const int32_t back = 1 + static_cast<int32_t>(rng() % at);
      m.rollback(back);
      at -= back;
      std::vector<uint32_t> mask(m.bitmask_words());
      m.fill_next_token_bitmask(mask.data());
      ASSERT_EQ(mask, masks[at]);
      ASSERT_EQ(m.can_terminate(), can_end[at]);
    }
  }
}

TEST(grammar_matcher, AcceptedTokensAreAcceptedWholeAndRejectedPrefixesStayRejected) {
  std::mt19937 rng(8);
  for (const auto& g : test_grammars()) {
    std::vector<std::string> finished;
    std::vector<std::string> rejected;  // prefix + a token the mask rejected there
    for (int walk = 0; walk < 20; ++walk) {
      GrammarMatcher m(g);
      std::string text;
      for (int step = 0; step < 200 && !m.is_terminated(); ++step) {
        std::vector<uint32_t> mask(m.bitmask_words());
        m.fill_next_token_bitmask(mask.data());
        std::vector<int32_t> ids = allowed_ids(mask);
        // Prefer stopping after a while, so walks finish.
        if (m.can_terminate() && (step > 20 || rng() % 4 == 0)) ids = {kEos};
        for (int k = 0; k < 3; ++k) {
          const int32_t other = 2 + static_cast<int32_t>(rng() % (vocab()->num_tokens() - 2));
          if (!bit(mask, other) && vocab()->is_regular(other)) {
            rejected.push_back(text + vocab()->token_bytes(other));
          }
        }
        const int32_t pick = ids[rng() % ids.size()];
        ASSERT_TRUE(m.accept_token(pick));
        if (pick != kEos) text += vocab()->token_bytes(pick);
      }
      if (m.is_terminated()) {
        EXPECT_TRUE(test::full_match(g, text)) << text;
        finished.push_back(text);
      }
    }
    EXPECT_GT(finished.size(), 10u);
    for (const std::string& r : rejected) {
      GrammarMatcher m(g);
      EXPECT_FALSE(m.accept_bytes(r)) << r;
      for (const std::string& f : finished) EXPECT_NE(f.rfind(r, 0), 0u) << r << " / " << f;
    }
  }
}

TEST(grammar_matcher, StopAndSpecialTokens) {
  auto g = test::must_compile(*regex_to_grammar("ab?"), vocab());
  GrammarMatcher m(g);
  EXPECT_FALSE(m.can_terminate());
  EXPECT_FALSE(m.accept_token(kEos));
  EXPECT_FALSE(m.accept_token(kSpecial));
  EXPECT_FALSE(m.accept_token(-3));
  EXPECT_FALSE(m.accept_token(vocab()->vocab_size() + 7));
  const int32_t a = 2 + 'a';
  ASSERT_TRUE(m.accept_token(a));
  EXPECT_TRUE(m.can_terminate());
  ASSERT_TRUE(m.accept_token(kEos));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.can_terminate());
  EXPECT_FALSE(m.accept_token(2 + 'b'));
  std::vector<uint32_t> mask(m.bitmask_words());
  m.fill_next_token_bitmask(mask.data());
  // Terminated: only the stop tokens (a sampler never sees a row with nothing allowed).
  EXPECT_EQ(allowed_ids(mask), std::vector<int32_t>{kEos});
  m.rollback(1);  // un-terminates
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.accept_token(2 + 'b'));
  m.reset();
  EXPECT_EQ(m.num_steps(), 0);
  EXPECT_FALSE(m.can_terminate());
}

TEST(grammar_matcher, CompactionKeepsEveryState) {
  auto g = test_grammars()[1];
  MatcherOptions tiny;
  tiny.compact_sets = 8;
  tiny.compact_frames = 16;
  GrammarMatcher compacting(g, tiny), plain(g);
  std::mt19937 rng(3);
  std::vector<int32_t> picks;
  for (int step = 0; step < 60; ++step) {
    std::vector<uint32_t> a(plain.bitmask_words()), b(plain.bitmask_words());
    plain.fill_next_token_bitmask(a.data());
    compacting.fill_next_token_bitmask(b.data());
    ASSERT_EQ(a, b) << step;
    std::vector<int32_t> ids = allowed_ids(a);
    ids.erase(std::remove(ids.begin(), ids.end(), kEos), ids.end());
    if (ids.empty()) break;
    const int32_t pick = ids[rng() % ids.size()];
    ASSERT_TRUE(plain.accept_token(pick));
    ASSERT_TRUE(compacting.accept_token(pick));
    if (step % 7 == 6) {
      plain.rollback(2);
      compacting.rollback(2);
    }
  }
}

TEST(grammar_matcher, OneCompiledGrammarServesConcurrentMatchers) {
  // Fresh compiled grammars (empty mask caches), filled lazily from four threads at once.
  for (const std::string& schema : {test::schema_corpus()[16], test::schema_corpus()[62]}) {
    auto g = test::must_compile(*json_schema_to_grammar(schema), vocab());
    auto reference = test::must_compile(*json_schema_to_grammar(schema), vocab());
    std::vector<std::vector<std::vector<uint32_t>>> results(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 rng(11);  // the same walk in every thread
        GrammarMatcher m(g);
        for (int step = 0; step < 25; ++step) {
          std::vector<uint32_t> mask(m.bitmask_words());
          m.fill_next_token_bitmask(mask.data());
          results[t].push_back(mask);
          std::vector<int32_t> ids = allowed_ids(mask);
          ids.erase(std::remove(ids.begin(), ids.end(), kEos), ids.end());
          if (ids.empty()) break;
          m.accept_token(ids[rng() % ids.size()]);
        }
      });
    }
    for (auto& th : threads) th.join();
    std::mt19937 rng(11);
    GrammarMatcher m(reference);
    for (size_t step = 0; step < results[0].size(); ++step) {
      std::vector<uint32_t> mask(m.bitmask_words());
      m.fill_next_token_bitmask(mask.data());
      for (int t = 0; t < 4; ++t) ASSERT_EQ(results[t][step], mask);
      std::vector<int32_t> ids = allowed_ids(mask);
      ids.erase(std::remove(ids.begin(), ids.end(), kEos), ids.end());
      if (ids.empty()) break;
      m.accept_token(ids[rng() % ids.size()]);
    }
  }
}

TEST(grammar_matcher, PrecomputedAndLazyMasksAgree) {
  const std::string schema = test::schema_corpus()[16];
  CompileOptions eager;
  eager.precompute_masks = true;
  auto a = CompiledGrammar::compile(*json_schema_to_grammar(schema), vocab(), eager);
  auto b = CompiledGrammar::compile(*json_schema_to_grammar(schema), vocab());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GT((*a)->mask_cache().memory_bytes(), 0u);
  GrammarMatcher ma(*a), mb(*b);
  std::mt19937 rng(2);
  for (int step = 0; step < 30; ++step) {
    std::vector<uint32_t> x(ma.bitmask_words()), y(mb.bitmask_words());
    ma.fill_next_token_bitmask(x.data());
    mb.fill_next_token_bitmask(y.data());
    ASSERT_EQ(x, y);
    std::vector<int32_t> ids = allowed_ids(x);
    ids.erase(std::remove(ids.begin(), ids.end(), kEos), ids.end());
    if (ids.empty()) break;
    const int32_t pick = ids[rng() % ids.size()];
    ma.accept_token(pick);
    mb.accept_token(pick);
  }
}

TEST(grammar_compiler, CachesByKindAndSourceWithLru) {
  GrammarCompilerOptions options;
  options.cache_capacity = 2;
  GrammarCompiler compiler(vocab(), options);
  auto a = compiler.compile(GrammarKind::kRegex, "a+");
  ASSERT_TRUE(a.ok());
  auto a2 = compiler.compile(GrammarKind::kRegex, "a+");
  ASSERT_TRUE(a2.ok());
  EXPECT_EQ(a->get(), a2->get());
  EXPECT_EQ(compiler.cache_hits(), 1u);
  // Same text, other kind: another entry.
  auto e = compiler.compile(GrammarKind::kEbnf, "root ::= \"a\"+");
  ASSERT_TRUE(e.ok());
  EXPECT_NE(a->get(), e->get());
  EXPECT_EQ(compiler.cache_size(), 2u);
  // A third entry evicts the least recently used (the regex).
  ASSERT_TRUE(compiler.compile(GrammarKind::kJsonObject, "").ok());
  EXPECT_EQ(compiler.cache_size(), 2u);
  auto a3 = compiler.compile(GrammarKind::kRegex, "a+");
  ASSERT_TRUE(a3.ok());
  EXPECT_NE(a->get(), a3->get());
  // An evicted grammar stays valid for its holders.
  GrammarMatcher m(*a);
  EXPECT_TRUE(m.accept_bytes("aaa"));
  // Errors are reported, not cached.
  auto bad = compiler.compile(GrammarKind::kJsonSchema, R"({"type":"object","if":{}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unsupported keyword 'if'"), std::string::npos);
  EXPECT_FALSE(compiler.compile(GrammarKind::kEbnf, "root ::= root \"x\" | \"y\"").ok());
  EXPECT_EQ(compiler.cache_size(), 2u);
  EXPECT_STREQ(grammar_kind_name(GrammarKind::kJsonSchema), "json_schema");
}

TEST(grammar_tokenizer_info, RejectsBadIds) {
  EXPECT_FALSE(TokenizerInfo::create({"a", "b"}, 1, {}).ok());
  EXPECT_FALSE(TokenizerInfo::create({"a", "b"}, 2, {5}).ok());
  EXPECT_FALSE(TokenizerInfo::create({"a", "b"}, 2, {}, {-1}).ok());
  auto ok = TokenizerInfo::create({"a", "b", ""}, 40, {1});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->bitmask_words(), 2);
  EXPECT_TRUE(ok->is_regular(0));
  EXPECT_FALSE(ok->is_regular(1));
  EXPECT_FALSE(ok->is_regular(2));
  EXPECT_TRUE(ok->is_stop(1));
}

}  // namespace
}  // namespace sgl::grammar
