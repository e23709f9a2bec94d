// Structured output through the engine: concurrent requests sampling at temperature 1 under
// JSON-schema, regex and EBNF grammars on real models (stories260K with its tokenizer; the tiny
// random models with the Qwen3 tokenizer's first ids), so the grammar alone must make the output
// valid. Each output is checked by a checker independent of the grammar engine (nlohmann + the
// test JSON Schema validator, PCRE2, a recursive-descent parser); unconstrained requests in the
// same batches must equal their solo greedy runs (masks never leak to other rows); both loops,
// chunked and mixed prefill, and the grammar's end (EOS exactly where it can end). A grammar
// behind a reasoning gate holds only the answer after the reasoning; a thinking budget forces the
// reasoning's closing tokens once it is spent, with or without a grammar.
// Built with SGL_TEST_ON_CUDA: the same on the GPU in float32 (the device mask kernel, device
// sampling, CUDA graphs and the overlapped mask computation).
#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <iostream>
#include <string>

#include "engine/batch_generator.h"
#include "engine/model_engine.h"
#include "grammar/grammar_compiler.h"
#include "grammar/json_schema_validator.h"
#include "scheduler/greedy_ids_request.h"
#include "server/grammar_backend.h"
#include "stream_outcome.h"
#include "test_data.h"
#include "tokenizer/tokenizer.h"

namespace sgl::engine {
namespace {

using grammar::GrammarKind;

struct Constraint {
  GrammarKind kind;
  std::string source;
};

// Bounded languages, so a temperature-1 random walk ends well inside max_new_tokens.
const std::vector<Constraint>& constraints() {
  static const std::vector<Constraint> kConstraints = {
      {GrammarKind::kJsonSchema,
       R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
           "age": {"type": "integer", "minimum": 0, "maximum": 120}},
           "required": ["name", "age"], "additionalProperties": false})"},
      {GrammarKind::kJsonSchema,
       R"({"type": "array", "items": {"enum": ["red", "green", "blue", 7, null]},
           "minItems": 1, "maxItems": 4})"},
      {GrammarKind::kJsonSchema,
       R"({"$defs": {"node": {"type": "object", "properties": {
             "v": {"type": "boolean"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"},
             "maxItems": 2}}, "required": ["v"], "additionalProperties": false}},
           "$ref": "#/$defs/node"})"},
      {GrammarKind::kJsonSchema,
       R"({"type": "object", "properties": {"when": {"type": "string", "format": "date"},
           "score": {"type": "number", "minimum": -5, "maximum": 5}},
           "required": ["when"], "additionalProperties": false})"},
      {GrammarKind::kRegex, "(cat|dog) [0-9]{2,4}!"},
      {GrammarKind::kRegex, "[a-z]{2,6}@[a-z]{2,5}\\.(com|org)"},
      {GrammarKind::kEbnf, R"g(root ::= expr
expr ::= term (("+" | "-") term){0,3}
term ::= [0-9]{1,3} | "(" expr ")")g"},
  };
  return kConstraints;
}

// The EBNF above as a recursive-descent parser: expr := term (('+'|'-') term){0,3};
// term := 1-3 digits | '(' expr ')'. Returns whether all of `s` parses.
bool parses_as_expression(const std::string& s) {
  size_t i = 0;
  std::function<bool()> expr, term;
  term = [&] {
    if (i < s.size() && s[i] == '(') {
      ++i;
      if (!expr() || i >= s.size() || s[i] != ')') return false;
      ++i;
      return true;
    }
    const size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - start < 3) ++i;
    return i > start;
  };
  expr = [&] {
    if (!term()) return false;
    for (int ops = 0; i < s.size() && (s[i] == '+' || s[i] == '-'); ++ops) {
      if (ops == 3) return false;
      ++i;
      if (!term()) return false;
    }
    return true;
  };
  return expr() && i == s.size();
}

// Empty: `text` is a complete string of the constraint's language; otherwise why not.
std::string check_complete(const Constraint& c, const std::string& text) {
  switch (c.kind) {
    case GrammarKind::kJsonSchema: {
      const auto value = grammar::test::OJson::parse(text, nullptr, false);
      if (value.is_discarded()) return "not JSON";
      const auto schema = grammar::test::OJson::parse(c.source);
      return grammar::test::Validator(schema).validate(value, schema);
    }
    case GrammarKind::kRegex:
      return grammar::test::regex_search("^(?:" + c.source + ")$", text) ? "" : "no full match";
    case GrammarKind::kEbnf:
      return parses_as_expression(text) ? "" : "not an expression";
    case GrammarKind::kJsonObject:
      break;
  }
  return "unchecked kind";
}

struct Config {
  const char* name;
  const char* model;
  const char* tokenizer;  // a model dir or testdata tokenizers/<dir>
  bool overlap;
  int64_t chunk;
  bool mixed;
};

class StructuredOutput : public ::testing::TestWithParam<Config> {};

TEST_P(StructuredOutput, EveryConstrainedOutputIsInItsLanguage) {
  const Config c = GetParam();
  auto tok = tokenizer::Tokenizer::from_dir(
      std::string(c.tokenizer) == "model" ? test::model_dir(c.model)
                                          : test::testdata_dir() / "tokenizers" / c.tokenizer);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();

  runner::ModelRunnerOptions ro;
#ifdef SGL_TEST_ON_CUDA
  ro.device = Device::cuda(0);
  ro.dtype = "float32";
#endif
  ro.num_kv_slots = 6000;
  EngineOptions eo;
  eo.disable_overlap_schedule = !c.overlap;
  eo.scheduler.chunked_prefill_size = c.chunk;
  eo.scheduler.enable_mixed_chunk = c.mixed;
  eo.scheduler.max_running_requests = 48;
  auto me = launch_model_engine(test::model_dir(c.model), ro, eo);
  ASSERT_TRUE(me.ok()) << me.status().to_string();
  me->engine->set_check_integrity(true);
  const int64_t vocab = me->model_runner->config().vocab_size;
  const std::vector<int32_t> stops = me->engine->options().eos_token_ids;
  auto info = server::grammar_tokenizer_info(**tok, vocab, stops);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  grammar::GrammarCompiler compiler(
      std::make_shared<const grammar::TokenizerInfo>(std::move(info).value()));

  std::vector<int32_t> prompt = (*tok)->encode("Once upon a time", {});
  for (int32_t& id : prompt) id %= static_cast<int32_t>(vocab);  // a tokenizer wider than the model
  struct Submitted {
    int constraint = -1;  // -1: an unconstrained greedy neighbour
    GenerateRequest request;
    std::shared_ptr<RequestStream> stream;
  };
  std::vector<Submitted> submitted;
  constexpr int kPerConstraint = 4;
  for (int i = 0; i < static_cast<int>(constraints().size()) * kPerConstraint; ++i) {
    const Constraint& con = constraints()[i % constraints().size()];
    auto compiled = compiler.compile(con.kind, con.source);
    ASSERT_TRUE(compiled.ok()) << con.source << ": " << compiled.status().to_string();
    GenerateRequest r;
    r.input_ids = prompt;
    r.input_ids.push_back(1 + i % 50);  // distinct prompts, a shared prefix
    r.max_new_tokens = 200;
    r.sampling.temperature = 1.0f;
    r.sampling.seed = 1000 + i;
    r.stop_token_ids = stops;
    r.grammar = *compiled;
    submitted.push_back({static_cast<int>(i % constraints().size()), r, nullptr});
    if (i % 4 == 0) {  // an unconstrained neighbour every few requests
      std::vector<int32_t> p = prompt;
      p.push_back(60 + i);
      submitted.push_back({-1, test::greedy_ids_request(p, 24), nullptr});
    }
  }
  for (Submitted& s : submitted) {
    auto stream = me->engine->submit(s.request);
    ASSERT_TRUE(stream.ok()) << stream.status().to_string();
    s.stream = *stream;
  }

  runner::ModelRunnerOptions solo_options = ro;
  solo_options.num_kv_slots = 1024;
  solo_options.max_batch_size = 1;
  auto solo_runner = runner::ModelRunner::create(test::model_dir(c.model), solo_options);
  ASSERT_TRUE(solo_runner.ok());
  BatchGenerator solo(**solo_runner, (*solo_runner)->config().eos_token_ids);

  int complete = 0, constrained = 0;
  for (const Submitted& s : submitted) {
    const test::Outcome got = test::collect(*s.stream);
    if (s.constraint < 0) {
      auto alone = solo.generate({s.request});
      ASSERT_TRUE(alone.ok());
      EXPECT_EQ(got.ids, alone->at(0).output_ids) << c.name << ": an unconstrained neighbour";
      continue;
    }
    ++constrained;
    const Constraint& con = constraints()[s.constraint];
    std::string text;
    for (size_t k = 0; k < got.ids.size(); ++k) {
      const bool last = k + 1 == got.ids.size();
      if (last && got.finish.reason == scheduler::FinishReason::kStop) {
        EXPECT_EQ(got.finish.matched_token, got.ids[k]);
        continue;  // the stop token: allowed only where the grammar can end
      }
      text += (*tok)->token_bytes(got.ids[k]).value_or("<out of range>");
    }
    // SentencePiece tokens carry the space before a word: JSON may start with whitespace, the
    // regexes and the expression grammar may not, so their outputs never do.
    if (got.finish.reason == scheduler::FinishReason::kStop) {
      ++complete;
      EXPECT_EQ(check_complete(con, text), "") << c.name << ": '" << text << "' for " << con.source;
    } else {
      EXPECT_EQ(got.finish.reason, scheduler::FinishReason::kLength) << got.finish.message;
      // Cut short: still a prefix of the language (the grammar engine's own check here).
      grammar::GrammarMatcher matcher(s.request.grammar);
      EXPECT_TRUE(matcher.accept_bytes(text)) << c.name << ": '" << text << "'";
    }
  }
  // The languages are bounded: nearly every walk ends with its grammar.
  EXPECT_GE(complete, constrained * 3 / 4) << c.name;
  EXPECT_TRUE(me->engine->last_integrity().ok()) << me->engine->last_integrity().to_string();
  std::cout << c.name << ": " << complete << "/" << constrained
            << " constrained outputs complete\n";
}

// stories260K in an engine (`overlap`: the overlap loop), with a compiler of grammars over its
// tokenizer and a way to run a request to its end.
struct StoriesWithGrammars {
  // ngram_draft_tokens > 0: NGRAM speculative decoding with that many tokens a verify.
  explicit StoriesWithGrammars(bool overlap, int32_t ngram_draft_tokens = 0) {
    auto loaded = tokenizer::Tokenizer::from_dir(test::model_dir("stories260K"));
    EXPECT_TRUE(loaded.ok()) << loaded.status().to_string();
    if (!loaded.ok()) return;
    tok = std::move(loaded).value();
    runner::ModelRunnerOptions ro;
#ifdef SGL_TEST_ON_CUDA
    ro.device = Device::cuda(0);
    ro.dtype = "float32";
#endif
    ro.num_kv_slots = 2048;
    EngineOptions eo;
    eo.disable_overlap_schedule = !overlap;
    if (ngram_draft_tokens > 0) {
      eo.scheduler.speculative.algorithm = speculative::SpeculativeAlgorithm::kNgram;
      eo.scheduler.speculative.num_draft_tokens = ngram_draft_tokens;
    }
    auto launched = launch_model_engine(test::model_dir("stories260K"), ro, eo);
    EXPECT_TRUE(launched.ok()) << launched.status().to_string();
    if (!launched.ok()) return;
    me = std::move(launched).value();
    me.engine->set_check_integrity(true);
    stops = me.engine->options().eos_token_ids;
    auto info = server::grammar_tokenizer_info(*tok, me.model_runner->config().vocab_size, stops);
    EXPECT_TRUE(info.ok()) << info.status().to_string();
    if (!info.ok()) return;
    compiler = std::make_unique<grammar::GrammarCompiler>(
        std::make_shared<const grammar::TokenizerInfo>(std::move(info).value()));
  }
  bool ok() const { return compiler != nullptr; }
  test::Outcome run(const GenerateRequest& r) {
    auto stream = me.engine->submit(r);
    EXPECT_TRUE(stream.ok()) << stream.status().to_string();
    return stream.ok() ? test::collect(**stream) : test::Outcome{};
  }

  std::unique_ptr<tokenizer::Tokenizer> tok;
  ModelEngine me;
  std::vector<int32_t> stops;
  std::unique_ptr<grammar::GrammarCompiler> compiler;
};

// A grammar that ends on the request's last allowed token: the length limit is the finish
// reason, as SGLang checks it before the grammar's end (ignore_eos: the EOS the grammar takes is
// no stop of its own); one token more and the grammar's end is.
TEST(StructuredOutputFinish, TheLengthLimitBeforeTheGrammarsEnd) {
  StoriesWithGrammars s(/*overlap=*/true);
  ASSERT_TRUE(s.ok());
  auto compiled = s.compiler->compile(constraints()[4].kind, constraints()[4].source);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  GenerateRequest r = test::greedy_ids_request(s.tok->encode("Once upon a time", {}), 200);
  r.grammar = *compiled;
  const test::Outcome whole = s.run(r);
  ASSERT_EQ(whole.finish.reason, scheduler::FinishReason::kStop) << whole.finish.message;
  const auto n = static_cast<int32_t>(whole.ids.size());
  ASSERT_GT(n, 3);
  r.max_new_tokens = n;
  const test::Outcome at_limit = s.run(r);
  EXPECT_EQ(at_limit.ids, whole.ids);
  EXPECT_EQ(at_limit.finish.reason, scheduler::FinishReason::kLength);
  r.max_new_tokens = n + 1;
  EXPECT_EQ(s.run(r).finish.reason, scheduler::FinishReason::kStop);
}

// NGRAM drafts under a grammar: the scheduler checks its drafts against the grammar (cut where it
// refuses one) and masks each verify row as the grammar stands after the drafts before it, so
// the tokens are plain decoding's, greedy and sampled alike, while drafts are accepted (forced
// repeats in the outputs). Both loops.
TEST(StructuredOutputSpeculative, NgramDraftsKeepTheGrammarsTokens) {
  for (const bool overlap : {false, true}) {
    const std::string label = overlap ? "overlap" : "normal";
    StoriesWithGrammars plain(overlap), spec(overlap, /*ngram_draft_tokens=*/6);
    ASSERT_TRUE(plain.ok() && spec.ok());
    const std::vector<Constraint> grammars = {
        {GrammarKind::kRegex, "(Once upon a time, there was a little girl\\. ){3}"},
        {GrammarKind::kJsonSchema,
         R"({"type": "array", "items": {"enum": ["red", "green"]}, "minItems": 8,
             "maxItems": 8})"},
        constraints()[0],
        constraints()[4]};
    std::vector<GenerateRequest> requests;
    for (size_t i = 0; i < grammars.size() * 2; ++i) {
      const Constraint& con = grammars[i % grammars.size()];
      auto compiled = plain.compiler->compile(con.kind, con.source);
      ASSERT_TRUE(compiled.ok()) << con.source << ": " << compiled.status().to_string();
      GenerateRequest r = test::greedy_ids_request(plain.tok->encode("Once upon a time", {}), 160);
      if (i >= grammars.size()) {  // sampled: each verify row draws with its position's step
        r.sampling.temperature = 1.0f;
        r.sampling.seed = 11 + static_cast<int64_t>(i);
      }
      r.grammar = *compiled;  // read-only, shared by both engines
      requests.push_back(std::move(r));
    }
    const std::vector<test::Outcome> want = test::submit_and_collect(*plain.me.engine, requests);
    const std::vector<test::Outcome> got = test::submit_and_collect(*spec.me.engine, requests);
    test::expect_same_outcomes(got, want, 1e-4, label);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(want[i].finish.reason, scheduler::FinishReason::kStop) << label << " " << i;
    }
    EXPECT_TRUE(spec.me.engine->last_integrity().ok())
        << spec.me.engine->last_integrity().to_string();
    const scheduler::SchedulerStats s = spec.me.engine->get_stats().scheduler;
    EXPECT_EQ(s.spec_plain_requests, 0) << label;
    EXPECT_GT(s.spec_accepted_tokens, 0) << label << ": no draft accepted under the grammars";
    std::cout << label << ": " << s.spec_verify_steps << " verify steps, " << s.spec_accepted_tokens
              << " of " << s.spec_draft_tokens << " drafts accepted\n";
  }
}

// With a reasoning gate the grammar waits (SGLang's require_reasoning): the output is the
// unconstrained greedy one up to the closing ids (two of its own tokens here), then an answer in
// the grammar's language; with an opening token, that token first (which the grammar refuses)
// opens the reasoning, and any other first token (the opening kept away by a logit bias) answers
// under the grammar from the start. Both loops.
TEST(StructuredOutputReasoning, TheGrammarHoldsTheAnswerAfterTheReasoning) {
  for (const bool overlap : {true, false}) {
    StoriesWithGrammars s(overlap);
    ASSERT_TRUE(s.ok());
    const std::vector<int32_t>& stops = s.stops;
    const Constraint regex = constraints()[4];
    auto compiled = s.compiler->compile(regex.kind, regex.source);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    const std::vector<int32_t> prompt = s.tok->encode("Once upon a time", {});
    const auto run = [&](const GenerateRequest& r) { return s.run(r); };

    const std::vector<int32_t> free = run(test::greedy_ids_request(prompt, 24)).ids;
    ASSERT_EQ(free.size(), 24u);
    // The closing ids: the first pair of the free output not seen earlier in it, from token 2.
    size_t k = 2;
    const auto seen_before = [&](size_t at) {
      for (size_t i = 0; i < at; ++i) {
        if (free[i] == free[at] && free[i + 1] == free[at + 1]) return true;
      }
      return false;
    };
    while (k + 2 < free.size() && seen_before(k)) ++k;
    ASSERT_LT(k + 2, free.size());
    GenerateRequest gated = test::greedy_ids_request(prompt, 80);
    gated.ignore_eos = false;
    gated.stop_token_ids = stops;
    gated.grammar = *compiled;
    GenerateRequest plain = gated;
    gated.reasoning_gate = {.end_ids = {free[k], free[k + 1]}, .start_id = -1};
    grammar::GrammarMatcher refuses_first(*compiled);
    ASSERT_FALSE(refuses_first.accept_token(free[0])) << "the opening must be the gate's alone";
    GenerateRequest opened = gated;
    opened.reasoning_gate.start_id = free[0];
    GenerateRequest not_opened = opened;
    not_opened.sampling.logit_bias = {{free[0], -100.f}};

    for (const GenerateRequest* r : {&gated, &opened}) {
      const test::Outcome got = run(*r);
      ASSERT_GT(got.ids.size(), k + 2) << overlap;
      EXPECT_EQ(std::vector<int32_t>(got.ids.begin(), got.ids.begin() + k + 2),
                std::vector<int32_t>(free.begin(), free.begin() + k + 2))
          << overlap << ": the reasoning is the free output";
      ASSERT_EQ(got.finish.reason, scheduler::FinishReason::kStop) << got.finish.message;
      std::string answer;
      for (size_t i = k + 2; i + 1 < got.ids.size(); ++i) answer += *s.tok->token_bytes(got.ids[i]);
      EXPECT_EQ(check_complete(regex, answer), "") << overlap << ": '" << answer << "'";
    }
    EXPECT_EQ(run(not_opened).ids, run(plain).ids) << overlap;
    EXPECT_TRUE(s.me.engine->last_integrity().ok()) << s.me.engine->last_integrity().to_string();
  }
}

// A thinking budget (SGLang's max_thinking_tokens) without a grammar: the first `budget` tokens
// are the free output, then the forced closing tokens, then what the model generates after them
// (the solo greedy run of the prompt with those tokens appended: the forced tokens went into
// the KV cache like sampled ones). A reasoning that closes within its budget is not touched; one
// that never opens is not either. A malformed budget is refused. Both loops.
TEST(StructuredOutputReasoning, AThinkingBudgetForcesTheCloseThenTheAnswerIsFree) {
  for (const bool overlap : {true, false}) {
    StoriesWithGrammars s(overlap);
    ASSERT_TRUE(s.ok());
    const std::vector<int32_t> prompt = s.tok->encode("Once upon a time", {});
    const auto run = [&](const GenerateRequest& r) { return s.run(r); };
    const std::vector<int32_t> free = run(test::greedy_ids_request(prompt, 24)).ids;
    ASSERT_EQ(free.size(), 24u);
    // Closing ids the free output does not write early: two tokens it never has in a row.
    const grammar::ReasoningGate base = {.end_ids = {free[0], free[0]}, .start_id = -1};
    for (size_t i = 0; i + 1 < free.size(); ++i) {
      ASSERT_FALSE(free[i] == free[0] && free[i + 1] == free[0]) << "pick other closing ids";
    }
    constexpr int32_t kBudget = 5;
    const int32_t newline = free[1];
    GenerateRequest budgeted = test::greedy_ids_request(prompt, 16);
    budgeted.reasoning_gate = base;
    budgeted.reasoning_gate.max_tokens = kBudget;
    budgeted.reasoning_gate.budget_end_ids = {newline, free[0], free[0]};
    const test::Outcome got = run(budgeted);
    std::vector<int32_t> expected(free.begin(), free.begin() + kBudget);
    expected.insert(expected.end(), {newline, free[0], free[0]});
    std::vector<int32_t> continued = prompt;
    continued.insert(continued.end(), expected.begin(), expected.end());
    const std::vector<int32_t> after =
        run(test::greedy_ids_request(continued, 16 - static_cast<int32_t>(expected.size()))).ids;
    expected.insert(expected.end(), after.begin(), after.end());
    EXPECT_EQ(got.ids, expected) << overlap;

    // Closed within the budget (the gate's closing ids are the free output's 3rd and 4th
    // tokens, the budget 6): the free output, untouched.
    GenerateRequest closes = test::greedy_ids_request(prompt, 24);
    closes.reasoning_gate = {.end_ids = {free[2], free[3]},
                             .start_id = -1,
                             .max_tokens = 6,
                             .budget_end_ids = {free[2], free[3]}};
    EXPECT_EQ(run(closes).ids, free) << overlap;
    // The output may open the reasoning with a token it never writes first: it answers freely.
    GenerateRequest never_opens = budgeted;
    never_opens.reasoning_gate.start_id = free[1] == free[0] ? free[2] : free[1];
    never_opens.max_new_tokens = 24;
    EXPECT_EQ(run(never_opens).ids, free) << overlap;

    GenerateRequest bad = budgeted;
    bad.reasoning_gate.budget_end_ids = {free[0], newline};  // does not end with the closing ids
    EXPECT_EQ(s.me.engine->submit(bad).status().code(), StatusCode::kInvalidArgument);
    bad = budgeted;
    bad.reasoning_gate.end_ids.clear();
    EXPECT_EQ(s.me.engine->submit(bad).status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(s.me.engine->last_integrity().ok()) << s.me.engine->last_integrity().to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Configs, StructuredOutput,
    ::testing::Values(Config{"stories_overlap", "stories260K", "model", true, 8192, false},
                      Config{"stories_no_overlap", "stories260K", "model", false, 8192, false},
                      Config{"stories_mixed_chunk16", "stories260K", "model", true, 16, true},
                      Config{"qwen3_overlap", "tiny-qwen3", "qwen3", true, 8192, false},
                      Config{"qwen3_moe_chunk16", "tiny-qwen3-moe", "qwen3", true, 16, false}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sgl::engine
