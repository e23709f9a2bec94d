// The JSON Schema suite (tests/grammar/data/json_schemas.jsonl, 300+ real-world shapes): every
// schema compiles, and random walks of the matcher (random allowed bytes; random allowed tokens
// of the Llama-3 vocabulary, as constrained sampling at temperature 1 would pick them) end in
// JSON that validates against the schema. With SGL_GRAMMAR_WALKS_OUT set, the walks' texts are
// written there as JSONL ({"id", "text"}) for tests/grammar/test_schema_suite_jsonschema.py,
// which checks them again with Python's jsonschema.
#include "schema_suite.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <set>

#include "grammar/json_schema_compiler.h"
#include "grammar_test_util.h"
#include "json_schema_validator.h"
#include "llama3_vocab.h"

namespace sgl::grammar {
namespace {

using test::OJson;

// Appends walks to $SGL_GRAMMAR_WALKS_OUT when set.
class WalkLog {
 public:
  WalkLog() {
    if (const char* path = std::getenv("SGL_GRAMMAR_WALKS_OUT")) out_.open(path, std::ios::app);
  }
  void add(const std::string& id, const std::string& text) {
    if (out_) out_ << OJson{{"id", id}, {"text", text}}.dump() << "\n";
  }

 private:
  std::ofstream out_;
};

JsonSchemaOptions options_for(size_t index) {
  // Every third schema with flexible whitespace (pretty-printing models), the rest compact.
  JsonSchemaOptions options;
  if (index % 3 == 2) {
    options.whitespace = JsonWhitespace::kFlexible;
    options.max_whitespace = 3;
  }
  return options;
}

const std::vector<test::SuiteSchema>& suite() {
  static const auto kSuite = test::load_schema_suite();
  return kSuite;
}

TEST(grammar_schema_suite, HasAtLeast300Schemas) {
  EXPECT_GE(suite().size(), 300u);
  std::set<std::string> ids;
  for (const auto& s : suite()) EXPECT_TRUE(ids.insert(s.id).second) << "duplicate id " << s.id;
}

TEST(grammar_schema_suite, ByteWalksValidate) {
  std::mt19937 rng(11);
  WalkLog log;
  int walks = 0;
  for (size_t i = 0; i < suite().size(); ++i) {
    const auto& s = suite()[i];
    SCOPED_TRACE(s.id + ": " + s.text);
    auto g = json_schema_to_grammar(s.text, options_for(i));
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    auto compiled = CompiledGrammar::compile(std::move(g).value(), nullptr);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    const OJson schema = OJson::parse(s.text);
    test::Validator validator(schema);
    for (int k = 0; k < 4; ++k) {
      std::string out;
      ASSERT_TRUE(test::random_walk(*compiled, rng, out, 40, 0.05)) << "stuck at: " << out;
      const OJson value = OJson::parse(out, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << "not JSON: " << out;
      EXPECT_EQ(validator.validate(value, schema), "") << out;
      log.add(s.id, out);
      ++walks;
    }
  }
  EXPECT_GE(walks, 1200);
}

// Token-level generation as the server runs it: fill the mask, sample an allowed token
// uniformly (temperature 1 over flat logits: the grammar alone must force validity), accept.
// Past `budget` tokens the walk steers to an end with single-byte tokens (closers first), as
// test::random_walk does with bytes. Each step also checks a few random tokens: a set bit
// means accept_token succeeds, a clear one that it fails.
bool token_walk(const std::shared_ptr<const CompiledGrammar>& g, std::mt19937& rng,
                std::string& text, int budget) {
  const TokenizerInfo& vocab = g->tokenizer();
  GrammarMatcher m(g);
  std::vector<uint32_t> mask(m.bitmask_words());
  std::vector<int32_t> allowed;
  text.clear();
  auto tier = [](uint8_t b) {
    if (b == '"' || b == '}' || b == ']') return 0;
    if (b == '{' || b == '[') return 3;
    if (b < 0x80 && !std::isalnum(b) && !std::isspace(b)) return 1;
    return 2;
  };
  for (int step = 0; step < budget * 8; ++step) {
    m.fill_next_token_bitmask(mask.data());
    for (int probe = 0; probe < 4; ++probe) {
      const auto id = static_cast<int32_t>(rng() % vocab.num_tokens());
      const bool set = (mask[id >> 5] >> (id & 31)) & 1;
      const bool accepted = m.accept_token(id);
      EXPECT_EQ(set, accepted) << "token " << id << " after: " << text;
      if (accepted) m.rollback(1);
    }
    allowed.clear();
    for (int32_t id = 0; id < vocab.num_tokens(); ++id) {
      if ((mask[id >> 5] >> (id & 31)) & 1) allowed.push_back(id);
    }
    if (allowed.empty()) return false;
    if (m.can_terminate() && (step >= budget || rng() % 20 == 0)) {
      return m.accept_token(vocab.stop_ids()[0]);
    }
    if (step >= budget && rng() % 4 != 0) {
      std::vector<int32_t> small;
      int best = 4;
      for (int32_t id : allowed) {
        const std::string& t = vocab.token_bytes(id);
        if (t.size() == 1 && !vocab.is_stop(id)) best = std::min(best, tier(t[0]));
      }
      for (int32_t id : allowed) {
        const std::string& t = vocab.token_bytes(id);
        if (t.size() == 1 && !vocab.is_stop(id) && tier(t[0]) == best) small.push_back(id);
      }
      if (!small.empty()) allowed = small;
    }
    const int32_t pick = allowed[rng() % allowed.size()];
    if (!m.accept_token(pick)) return false;
    if (m.is_terminated()) return true;
    text += vocab.token_bytes(pick);
  }
  return false;
}

TEST(grammar_schema_suite, TokenWalksValidateWithLlama3Vocab) {
  const auto vocab = test::load_llama3_vocab();
  if (vocab == nullptr) GTEST_SKIP() << "no " << test::default_llama3_path();
  std::mt19937 rng(5);
  WalkLog log;
  int walks = 0, finished = 0;
  // A fresh grammar's masks are computed on first use, this test's cost: every 4th schema in
  // the normal run (~10 s), all of them with SGL_GRAMMAR_SUITE_ALL=1.
  const size_t stride = std::getenv("SGL_GRAMMAR_SUITE_ALL") != nullptr ? 1 : 4;
  for (size_t i = 0; i < suite().size(); i += stride) {
    const auto& s = suite()[i];
    SCOPED_TRACE(s.id + ": " + s.text);
    auto g = json_schema_to_grammar(s.text, options_for(i));
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    auto compiled = CompiledGrammar::compile(std::move(g).value(), vocab);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    const OJson schema = OJson::parse(s.text);
    test::Validator validator(schema);
    for (int k = 0; k < 1; ++k) {
      std::string out;
      ++walks;
      if (!token_walk(*compiled, rng, out, 40)) continue;  // long walks may not close in time
      ++finished;
      const OJson value = OJson::parse(out, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << "not JSON: " << out;
      EXPECT_EQ(validator.validate(value, schema), "") << out;
      log.add(s.id, out);
    }
  }
  // Nearly every walk reaches an end; the rest are checked as far as they went.
  EXPECT_GE(finished, walks * 9 / 10);
}

}  // namespace
}  // namespace sgl::grammar
