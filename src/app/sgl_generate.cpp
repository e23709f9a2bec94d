// sgl-generate: generate from the command line — one prompt, or a JSONL batch file submitted
// all at once through the continuous-batching engine.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "app/batch_file.h"
#include "app/cli_args.h"
#include "app/engine_flags.h"
#include "core/logging.h"
#include "engine/model_engine.h"
#include "model/model_source.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace sgl::app {
namespace {

constexpr const char* kUsage =
    R"(usage: sgl-generate --model-path DIR (--prompt TEXT | --prompt-ids 1,2,3 | --batch-file F.jsonl)
  [--max-new-tokens N=128] [--temperature T=1.0] [--top-k K=-1] [--top-p P=1.0] [--min-p P=0.0]
  [--seed S] [--ignore-eos] [--top-logprobs K] [--json]
)";

struct Options {
  std::string model_path;
  std::vector<GenerationJob> jobs;
  EngineSetup setup;
  bool json = false;
};

Result<GenerationJob> job_from_flags(const CliArgs& args) {
  GenerationJob job;
  engine::GenerateRequest& r = job.request;
  job.prompt = args.get("--prompt");
  SGL_ASSIGN_OR_RETURN(r.input_ids, args.get_int_list("--prompt-ids"));
  if (job.prompt.has_value() == args.has("--prompt-ids")) {
    return invalid_argument("give exactly one of --prompt, --prompt-ids and --batch-file");
  }
  SGL_ASSIGN_OR_RETURN(int64_t max_new, args.get_int("--max-new-tokens", 128));
  SGL_ASSIGN_OR_RETURN(double temperature, args.get_double("--temperature", 1.0));
  SGL_ASSIGN_OR_RETURN(int64_t top_k, args.get_int("--top-k", -1));
  SGL_ASSIGN_OR_RETURN(double top_p, args.get_double("--top-p", 1.0));
  SGL_ASSIGN_OR_RETURN(double min_p, args.get_double("--min-p", 0.0));
  SGL_ASSIGN_OR_RETURN(int64_t top_logprobs, args.get_int("--top-logprobs", 0));
  if (max_new < 0 || max_new > (1 << 30)) return invalid_argument("--max-new-tokens out of range");
  if (top_logprobs < 0 || top_logprobs > 1000)
    return invalid_argument("--top-logprobs out of range");
  r.max_new_tokens = static_cast<int32_t>(max_new);
  r.sampling.temperature = static_cast<float>(temperature);
  r.sampling.top_k = static_cast<int32_t>(top_k);
  r.sampling.top_p = static_cast<float>(top_p);
  r.sampling.min_p = static_cast<float>(min_p);
  if (args.has("--seed")) {
    SGL_ASSIGN_OR_RETURN(int64_t seed, args.get_int("--seed", 0));
    r.sampling.seed = static_cast<uint64_t>(seed);
  }
  r.top_logprobs_num = static_cast<int32_t>(top_logprobs);
  r.return_logprob = top_logprobs > 0;
  r.ignore_eos = args.has("--ignore-eos");
  return job;
}

Result<Options> parse_options(int argc, char** argv) {
  // The engine flags with their aliases (--tp for --tp-size), then the tool's own.
  FlagSets flags = flag_sets({engine_flag_table()});
  flags.values.insert({"--model-path", "--prompt", "--prompt-ids", "--batch-file",
                       "--max-new-tokens", "--temperature", "--top-k", "--top-p", "--min-p",
                       "--seed", "--top-logprobs"});
  flags.switches.insert({"--ignore-eos", "--json", "--help"});
  SGL_ASSIGN_OR_RETURN(CliArgs args, CliArgs::parse(argc, argv, flags));
  if (args.has("--help")) return invalid_argument("");
  Options o;
  if (!args.get("--model-path")) return invalid_argument("--model-path is required");
  o.model_path = *args.get("--model-path");
  o.json = args.has("--json");
  SGL_ASSIGN_OR_RETURN(o.setup, parse_engine_flags(args));
  SGL_RETURN_IF_ERROR(distributed::check_single_node(o.setup.nodes, "sgl-generate"));
  if (auto file = args.get("--batch-file")) {
    if (args.has("--prompt") || args.has("--prompt-ids")) {
      return invalid_argument("give exactly one of --prompt, --prompt-ids and --batch-file");
    }
    SGL_ASSIGN_OR_RETURN(o.jobs, read_batch_file(*file));
    o.json = true;  // one JSON line per request
  } else {
    SGL_ASSIGN_OR_RETURN(GenerationJob job, job_from_flags(args));
    o.jobs.push_back(std::move(job));
  }
  return o;
}

// One submitted job while it streams: detokenizes and watches stop strings.
struct Running {
  GenerationJob* job = nullptr;
  std::shared_ptr<engine::RequestStream> stream;
  std::vector<int32_t> output_ids;
  std::vector<std::vector<sampling::TokenLogprob>> top_logprobs;
  std::optional<tokenizer::IncrementalDetokenizer> detok;
  std::optional<tokenizer::StopStringMatcher> stops;
  std::string text;
  std::string finish_reason;
  bool done = false;
};

// Applies one event; returns true when the job needs an abort (a stop string matched).
bool apply(Running& r, const engine::StreamEvent& e) {
  r.output_ids.insert(r.output_ids.end(), e.token_ids.begin(), e.token_ids.end());
  r.top_logprobs.insert(r.top_logprobs.end(), e.top_logprobs.begin(), e.top_logprobs.end());
  bool stop_matched = false;
  if (r.detok) {
    std::string piece = r.detok->add(e.token_ids);
    if (e.finished) piece += r.detok->flush();
    auto m = r.stops->add(piece);
    r.text += m.text;
    if (m.matched) {
      stop_matched = true;
    } else if (e.finished) {
      r.text += r.stops->flush();
    }
  }
  if (stop_matched) {
    r.finish_reason = "stop";
    r.done = true;
  } else if (e.finished) {
    r.finish_reason = engine::finish_reason_name(e.finished->reason);
    r.done = true;
    if (e.finished->reason == scheduler::FinishReason::kAbort) {
      std::cerr << "sgl-generate: request aborted: " << e.finished->message << "\n";
    }
  }
  return stop_matched && !e.finished;
}

void print_json(const Running& r) {
  nlohmann::ordered_json out;
  out["prompt_ids"] = r.job->request.input_ids;
  out["output_ids"] = r.output_ids;
  out["text"] = r.text;
  out["finish_reason"] = r.finish_reason;
  if (r.job->request.top_logprobs_num > 0) {
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    for (const auto& step : r.top_logprobs) {
      nlohmann::ordered_json entries = nlohmann::ordered_json::array();
      for (const auto& t : step) entries.push_back({{"id", t.id}, {"logprob", t.logprob}});
      steps.push_back(entries);
    }
    out["logprobs"] = steps;
  }
  std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

int run(int argc, char** argv) {
  auto parsed = parse_options(argc, argv);
  if (!parsed.ok()) {
    if (!parsed.status().message().empty()) {
      std::cerr << "sgl-generate: " << parsed.status().message() << "\n";
    }
    std::cerr << kUsage << engine_flags_usage();
    return 2;
  }
  Options& o = *parsed;
  auto fail = [](const Status& s) {
    std::cerr << "sgl-generate: " << s.to_string() << "\n";
    return 1;
  };
  // Flags whose meaning differs here: said at any log level, as sgl-server does.
  for (const std::string& note : o.setup.notes) std::cerr << "sgl-generate: " << note << "\n";

  // First, so that a bad path reads as one (not as a missing tokenizer).
  if (auto format = model::check_model_path(o.model_path); !format.ok()) {
    return fail(format.status());
  }
  // The tokenizer is optional when every prompt is given as ids (random test models have none).
  std::unique_ptr<tokenizer::Tokenizer> tok;
  auto tok_result = tokenizer::Tokenizer::from_dir(o.model_path);
  if (tok_result.ok()) tok = std::move(tok_result).value();
  for (GenerationJob& job : o.jobs) {
    if (!job.prompt) continue;
    if (!tok) return fail(tok_result.status());
    job.request.input_ids = tok->encode(*job.prompt, {});
  }
  o.setup.engine.scheduler.max_running_requests = std::min<int32_t>(
      o.setup.engine.scheduler.max_running_requests, static_cast<int32_t>(o.jobs.size()));
  auto me = engine::launch_model_engine(o.model_path, o.setup.runner, o.setup.engine,
                                        tok ? tok->eos_token_ids() : std::vector<int32_t>{});
  if (!me.ok()) return fail(me.status());
  engine::Engine& engine = *me->engine;

  // Validate everything before submitting anything: a bad line fails the whole run.
  for (size_t i = 0; i < o.jobs.size(); ++i) {
    for (int32_t id : o.jobs[i].request.input_ids) {
      if (id < 0 || id >= me->model_runner->config().vocab_size) {
        return fail(invalid_argument("request " + std::to_string(i) + ": token id " +
                                     std::to_string(id) + " is outside the vocabulary [0, " +
                                     std::to_string(me->model_runner->config().vocab_size) + ")"));
      }
    }
  }
  std::vector<Running> running(o.jobs.size());
  for (size_t i = 0; i < o.jobs.size(); ++i) {
    Running& r = running[i];
    r.job = &o.jobs[i];
    if (tok) {
      r.detok.emplace(*tok, std::vector<int32_t>{});
      r.stops.emplace(r.job->stop);
    }
    auto stream = engine.submit(r.job->request);
    if (!stream.ok()) return fail(stream.status().with_context("request " + std::to_string(i)));
    r.stream = *stream;
  }
  for (size_t remaining = running.size(); remaining > 0;) {
    bool progressed = false;
    for (Running& r : running) {
      if (r.done) continue;
      auto event = r.stream->next(std::chrono::milliseconds(0));
      if (!event) continue;
      progressed = true;
      if (apply(r, *event)) engine.abort(r.stream->rid());
      if (r.done) --remaining;
    }
    if (!progressed) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  for (const Running& r : running) {
    if (o.json) {
      print_json(r);
    } else {
      std::cout << r.text << "\n";
    }
  }
  return 0;
}

}  // namespace
}  // namespace sgl::app

int main(int argc, char** argv) { return sgl::app::run(argc, argv); }
