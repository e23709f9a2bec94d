// sgl-bench offline: N synthetic requests straight into the engine (scheduler, radix cache,
// overlap loop, CUDA graphs — everything but HTTP), all submitted at once after an untimed
// warm-up; throughput and the engine's own CPU time per decode step.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "app/batch_file.h"
#include "app/bench_commands.h"
#include "app/bench_model_source.h"
#include "app/cli_args.h"
#include "app/engine_flags.h"
#include "engine/model_engine.h"
#include "server/grammar_backend.h"
#include "tokenizer/tokenizer.h"

namespace sgl::app {
namespace {

constexpr const char* kUsage =
    R"(usage: sgl-bench offline (--model-path DIR|FILE.gguf | --config CONFIG.json)
  [--num-prompts 1000] [--random-input-len 1024] [--random-output-len 256]
  [--random-range-ratio 1.0] [--seed 1] [--output-file F.json]
  [--json-schema FILE | --regex PATTERN [--tokenizer-path DIR]] [--prompt-file F.jsonl]
  [--speculative-bench-accept-length L] [--skip-warmup] [engine flags]
Lengths are drawn uniformly from [ratio x len, len] (SGLang's random dataset); prompts are random
token ids; every request ignores EOS so it generates exactly its output length.
Before the timed requests, min(N, 16) random requests of 256 input and 16 output tokens (at
most the workload's longest) run untimed, as SGLang's bench_offline_throughput warms up: first-use
costs stay out of the figures (short runs counted them); --skip-warmup leaves it out.
--prompt-file: the requests of F.jsonl (sgl-generate --batch-file's lines, with prompt_ids and
no stop strings) as written, instead of random ones: e.g. real prompts for a trained EAGLE head
(scripts/train_eagle3_head.py writes such a file). --num-prompts and the lengths are ignored.
--json-schema / --regex: every request is constrained by that grammar (structured output), its
masks computed for the tokenizer at --tokenizer-path (default: the model's directory). Pick a
language that cannot end before the output length, so the token counts stay equal.
--speculative-bench-accept-length L (with a chain --speculative-algorithm): every verify step
yields L tokens, its first L - 1 drafts taken as accepted whatever the model samples, so the
engine's real speculative step costs are measured at accept length L on any model (dummy
weights and heads included). The generated tokens are then not the model's.
The output digest hashes every request's tokens: runs that generated the same tokens print the
same digest (a greedy speculative run against a plain one).
)";

// FNV-1a over every request's output ids in submission order, each request's end marked:
// equal digests mean two runs generated the same tokens.
class OutputDigest {
 public:
  void add(const std::vector<int32_t>& ids) {
    for (const int32_t id : ids) add_word(static_cast<uint32_t>(id));
  }
  void end_request() { add_word(~uint64_t{0}); }
  std::string hex() const {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash_));
    return text;
  }

 private:
  void add_word(uint64_t word) {
    for (int byte = 0; byte < 8; ++byte) {
      hash_ = (hash_ ^ ((word >> (8 * byte)) & 0xff)) * 1099511628211ull;
    }
  }
  uint64_t hash_ = 14695981039346656037ull;
};

struct Workload {
  std::vector<engine::GenerateRequest> requests;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
};

Workload make_workload(int64_t n, int64_t in_len, int64_t out_len, double ratio, uint64_t seed,
                       int64_t vocab) {
  std::mt19937_64 rng(seed);
  auto length = [&](int64_t len) {
    const auto lo = std::max<int64_t>(1, static_cast<int64_t>(ratio * static_cast<double>(len)));
    return std::uniform_int_distribution<int64_t>(std::min(lo, len), len)(rng);
  };
  std::uniform_int_distribution<int32_t> token(10, static_cast<int32_t>(vocab - 1));
  Workload w;
  for (int64_t i = 0; i < n; ++i) {
    engine::GenerateRequest r;
    r.input_ids.resize(length(in_len));
    for (int32_t& t : r.input_ids) t = token(rng);
    r.max_new_tokens = static_cast<int32_t>(length(out_len));
    r.sampling.temperature = 0.f;
    r.ignore_eos = true;
    w.input_tokens += static_cast<int64_t>(r.input_ids.size());
    w.output_tokens += r.max_new_tokens;
    w.requests.push_back(std::move(r));
  }
  return w;
}

// --prompt-file's requests as written (ids only: the bench has no tokenizer for text).
Result<Workload> read_workload(const std::filesystem::path& path, int64_t vocab) {
  SGL_ASSIGN_OR_RETURN(std::vector<GenerationJob> jobs, read_batch_file(path));
  Workload w;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string where = path.string() + " request " + std::to_string(i);
    if (jobs[i].prompt || !jobs[i].stop.empty()) {
      return invalid_argument(where + ": give prompt_ids and no stop strings");
    }
    engine::GenerateRequest& r = jobs[i].request;
    for (int32_t id : r.input_ids) {
      if (id < 0 || id >= vocab) return invalid_argument(where + ": token id out of vocabulary");
    }
    w.input_tokens += static_cast<int64_t>(r.input_ids.size());
    w.output_tokens += r.max_new_tokens;
    w.requests.push_back(std::move(r));
  }
  return w;
}

// SGLang's warm-up: min(N, 16) requests of 256 random input and 16 output tokens (their own seed:
// no prefix shared with the measured prompts; here never longer than the measured requests).
constexpr int64_t kWarmupRequests = 16, kWarmupInputLen = 256, kWarmupOutputLen = 16;

// What the requests generated, and their digest.
struct Generated {
  int64_t tokens = 0, aborted = 0;
  OutputDigest digest;
};

// Submits every request at once and drains the streams: draining in order (blocking) ends when
// the last request does; a stream's events merge while it waits, so no polling is needed.
Result<Generated> run_requests(engine::Engine& engine,
                               std::vector<engine::GenerateRequest> requests) {
  std::vector<std::shared_ptr<engine::RequestStream>> streams;
  for (engine::GenerateRequest& r : requests) {
    SGL_ASSIGN_OR_RETURN(auto stream, engine.submit(std::move(r)));
    streams.push_back(std::move(stream));
  }
  Generated g;
  for (const auto& stream : streams) {
    while (auto event = stream->next()) {
      g.tokens += static_cast<int64_t>(event->token_ids.size());
      g.digest.add(event->token_ids);
      if (event->finished) {
        g.digest.end_request();
        g.aborted += event->finished->reason == scheduler::FinishReason::kAbort;
        break;
      }
    }
  }
  return g;
}

// Runs the warm-up for workload `w` (untimed), printing how long it took.
Status warm_up(engine::Engine& engine, const Workload& w, uint64_t seed, int64_t vocab,
               const std::shared_ptr<const grammar::CompiledGrammar>& grammar) {
  // No longer than the measured requests, which the model is known to take.
  int64_t longest_input = 1, longest_output = 1;
  for (const engine::GenerateRequest& r : w.requests) {
    longest_input = std::max(longest_input, static_cast<int64_t>(r.input_ids.size()));
    longest_output = std::max(longest_output, static_cast<int64_t>(r.max_new_tokens));
  }
  const int64_t n = std::min(static_cast<int64_t>(w.requests.size()), kWarmupRequests);
  Workload warmup = make_workload(n, std::min(kWarmupInputLen, longest_input),
                                  std::min(kWarmupOutputLen, longest_output), 1.0, seed, vocab);
  for (engine::GenerateRequest& r : warmup.requests) r.grammar = grammar;
  const auto start = std::chrono::steady_clock::now();
  SGL_RETURN_IF_ERROR(run_requests(engine, std::move(warmup.requests)).status());
  std::printf("warm-up: %lld requests in %.2f s (untimed; --skip-warmup leaves it out)\n",
              static_cast<long long>(n),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return Status::ok_status();
}

// The engine's decode counters over the measured run: `after` less the warm-up's `before`.
struct RunCounters {
  int64_t decode_steps = 0;
  double decode_step_cpu_us = 0;
  int64_t spec_verify_steps = 0;
  double spec_accept_length = 0;  // 0 without verify steps
};
RunCounters counters_between(const engine::EngineStats& before, const engine::EngineStats& after) {
  RunCounters c;
  c.decode_steps = after.decode_steps - before.decode_steps;
  if (c.decode_steps > 0) {  // the engine keeps a mean over every step so far
    c.decode_step_cpu_us = (after.decode_step_cpu_us * static_cast<double>(after.decode_steps) -
                            before.decode_step_cpu_us * static_cast<double>(before.decode_steps)) /
                           static_cast<double>(c.decode_steps);
  }
  c.spec_verify_steps = after.scheduler.spec_verify_steps - before.scheduler.spec_verify_steps;
  if (c.spec_verify_steps > 0) {
    const int64_t accepted =
        after.scheduler.spec_accepted_tokens - before.scheduler.spec_accepted_tokens;
    c.spec_accept_length =
        1.0 + static_cast<double>(accepted) / static_cast<double>(c.spec_verify_steps);
  }
  return c;
}

int fail(const Status& s) { return bench_fail("offline", s); }

// --speculative-bench-accept-length into `spec` (parsed and validated already), checked.
Status set_bench_accept_length(const CliArgs& args, speculative::SpeculativeOptions& spec) {
  if (!args.has("--speculative-bench-accept-length")) return Status::ok_status();
  SGL_ASSIGN_OR_RETURN(const int64_t length, args.get_int("--speculative-bench-accept-length", 0));
  if (!spec.enabled()) {
    return invalid_argument("--speculative-bench-accept-length needs --speculative-algorithm");
  }
  spec.bench_accept_length = static_cast<int32_t>(std::clamp<int64_t>(length, -1, 1 << 20));
  return spec.validate(/*num_draft_tokens_set=*/true);
}

// The grammar of --json-schema FILE / --regex PATTERN, if given, compiled for the model.
Result<std::shared_ptr<const grammar::CompiledGrammar>> workload_grammar(
    const CliArgs& args, const std::filesystem::path& model_path, const engine::Engine& engine) {
  const auto schema_file = args.get("--json-schema");
  const auto regex = args.get("--regex");
  if (!schema_file && !regex) return std::shared_ptr<const grammar::CompiledGrammar>();
  if (schema_file && regex) return invalid_argument("--json-schema and --regex exclude each other");
  server::GrammarInput input{grammar::GrammarKind::kRegex, regex.value_or(""), "--regex"};
  if (schema_file) {
    std::ifstream in(*schema_file);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return invalid_argument("--json-schema: cannot read " + *schema_file);
    input = {grammar::GrammarKind::kJsonSchema, text.str(), "--json-schema"};
  }
  const std::filesystem::path tokenizer_dir =
      args.get("--tokenizer-path").value_or(model_path.string());
  SGL_ASSIGN_OR_RETURN(auto tokenizer, tokenizer::Tokenizer::from_dir(tokenizer_dir));
  const server::GrammarBackend backend(*tokenizer, engine.options().vocab_size,
                                       engine.options().eos_token_ids);
  const auto start = std::chrono::steady_clock::now();
  auto compiled = backend.compile(input);
  std::printf(
      "grammar: %s, compiled in %.1f ms (vocabulary indexing included)\n", input.field.c_str(),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return compiled;
}

}  // namespace

int run_bench_offline(int argc, char** argv) {
  std::set<std::string> value_flags = engine_value_flags();
  value_flags.insert({"--model-path", "--config", "--num-prompts", "--random-input-len",
                      "--random-output-len", "--random-range-ratio", "--seed", "--output-file",
                      "--json-schema", "--regex", "--tokenizer-path", "--prompt-file",
                      "--speculative-bench-accept-length"});
  std::set<std::string> switch_flags = engine_switch_flags();
  switch_flags.insert({"--help", "--skip-warmup"});
  auto args = CliArgs::parse(argc, argv, value_flags, switch_flags);
  if (!args.ok()) return fail(args.status());
  if (args->has("--help")) {
    std::cout << kUsage << engine_flags_usage();
    return 0;
  }
  auto setup = parse_engine_flags(*args);
  auto n = args->get_int("--num-prompts", 1000);
  auto in_len = args->get_int("--random-input-len", 1024);
  auto out_len = args->get_int("--random-output-len", 256);
  auto ratio = args->get_double("--random-range-ratio", 1.0);
  auto seed = args->get_int("--seed", 1);
  for (const Status& s : {setup.status(), n.status(), in_len.status(), out_len.status(),
                          ratio.status(), seed.status()}) {
    if (!s.ok()) return fail(s);
  }
  if (*n < 1 || *in_len < 1 || *out_len < 1 || *ratio < 0 || *ratio > 1) {
    return fail(invalid_argument(
        "--num-prompts and the lengths must be >= 1, --random-range-ratio in [0, 1]"));
  }
  if (const Status s = distributed::check_single_node(setup->nodes, "sgl-bench offline"); !s.ok()) {
    return fail(s);
  }
  for (const std::string& note : setup->notes) std::printf("note: %s\n", note.c_str());
  if (const Status s = set_bench_accept_length(*args, setup->engine.scheduler.speculative);
      !s.ok()) {
    return fail(s);
  }
  auto model_path = bench_model_path(*args, setup->runner.load_format);
  if (!model_path.ok()) {
    std::cerr << kUsage;
    return fail(model_path.status());
  }

  const auto load_start = std::chrono::steady_clock::now();
  auto me = engine::launch_model_engine(*model_path, setup->runner, setup->engine);
  if (!me.ok()) return fail(me.status());
  const std::chrono::duration<double> load_s = std::chrono::steady_clock::now() - load_start;
  const int64_t vocab = me->model_runner->config().vocab_size;
  Workload w;
  if (const auto file = args->get("--prompt-file")) {
    auto read = read_workload(*file, vocab);
    if (!read.ok()) return fail(read.status());
    w = std::move(read).value();
    *n = static_cast<int64_t>(w.requests.size());
  } else {
    w = make_workload(*n, *in_len, *out_len, *ratio, static_cast<uint64_t>(*seed), vocab);
  }
  auto grammar = workload_grammar(*args, *model_path, *me->engine);
  if (!grammar.ok()) return fail(grammar.status());
  for (engine::GenerateRequest& r : w.requests) r.grammar = *grammar;
  std::printf("loaded in %.2f s; %lld requests, %lld input + %lld output tokens\n", load_s.count(),
              static_cast<long long>(*n), static_cast<long long>(w.input_tokens),
              static_cast<long long>(w.output_tokens));

  engine::Engine& engine = *me->engine;
  if (!args->has("--skip-warmup")) {
    if (const Status s = warm_up(engine, w, static_cast<uint64_t>(*seed) + 1, vocab, *grammar);
        !s.ok()) {
      return fail(s);
    }
  }
  const engine::EngineStats before = engine.get_stats();
  const auto start = std::chrono::steady_clock::now();
  auto run = run_requests(engine, std::move(w.requests));
  if (!run.ok()) return fail(run.status());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const RunCounters counters = counters_between(before, engine.get_stats());
  const int64_t generated = run->tokens, aborted = run->aborted;

  std::printf("\n============ Offline Throughput Result ============\n");
  std::printf("%-40s %lld\n", "Successful requests:", static_cast<long long>(*n - aborted));
  std::printf("%-40s %lld\n", "Aborted requests:", static_cast<long long>(aborted));
  std::printf("%-40s %.2f\n", "Benchmark duration (s):", seconds);
  std::printf("%-40s %.2f\n", "Request throughput (req/s):", static_cast<double>(*n) / seconds);
  std::printf("%-40s %.1f\n",
              "Input token throughput (tok/s):", static_cast<double>(w.input_tokens) / seconds);
  std::printf("%-40s %.1f\n",
              "Output token throughput (tok/s):", static_cast<double>(generated) / seconds);
  std::printf("%-40s %.1f\n", "Engine CPU per decode step (us):", counters.decode_step_cpu_us);
  std::printf("%-40s %lld\n", "Decode steps:", static_cast<long long>(counters.decode_steps));
  if (counters.decode_steps > 0) {  // the prefill's time included: a bound on one step's
    std::printf("%-40s %.3f\n", "Time per decode step (ms):",
                1e3 * seconds / static_cast<double>(counters.decode_steps));
  }
  if (counters.spec_verify_steps > 0) {  // --speculative-algorithm
    std::printf("%-40s %.2f\n", "Accept length:", counters.spec_accept_length);
  }
  // Equal digests mean equal outputs: speculative runs against plain ones (greedy workloads).
  std::printf("%-40s %s\n", "Output digest:", run->digest.hex().c_str());
  std::printf("===================================================\n");
  if (const auto out = args->get("--output-file")) {
    nlohmann::json report = {{"num_prompts", *n},
                             {"aborted", aborted},
                             {"duration_s", seconds},
                             {"input_tokens", w.input_tokens},
                             {"output_tokens", generated},
                             {"request_throughput", static_cast<double>(*n) / seconds},
                             {"output_throughput", static_cast<double>(generated) / seconds},
                             {"decode_step_cpu_us", counters.decode_step_cpu_us},
                             {"decode_steps", counters.decode_steps},
                             {"spec_verify_steps", counters.spec_verify_steps},
                             {"spec_accept_length", counters.spec_accept_length},
                             {"output_digest", run->digest.hex()}};
    std::ofstream f(*out);
    f << report.dump(1) << "\n";
    if (!f) return fail(internal_error("cannot write " + *out));
  }
  return aborted == 0 ? 0 : 3;
}

}  // namespace sgl::app
