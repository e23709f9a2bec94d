// sgl-generate: generate a continuation of one prompt from the command line.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli_args.h"
#include "core/logging.h"
#include "engine/batch_generator.h"
#include "runner/model_runner.h"
#include "tokenizer/tokenizer.h"

namespace sgl::app {
namespace {

constexpr const char* kUsage =
    R"(usage: sgl-generate --model-path DIR (--prompt TEXT | --prompt-ids 1,2,3)
  [--max-new-tokens N=128] [--temperature T=1.0] [--top-k K=-1] [--top-p P=1.0] [--min-p P=0.0]
  [--seed S] [--ignore-eos] [--top-logprobs K] [--device cpu] [--attention-backend NAME]
  [--context-length N] [--json] [--log-level debug|info|warn|error]
)";

struct Options {
  std::string model_path;
  engine::GenerateRequest request;
  runner::ModelRunnerOptions runner;
  std::optional<std::string> prompt;
  bool json = false;
};

Result<Options> parse_options(int argc, char** argv) {
  SGL_ASSIGN_OR_RETURN(
      CliArgs args,
      CliArgs::parse(argc, argv,
                     {"--model-path", "--prompt", "--prompt-ids", "--max-new-tokens",
                      "--temperature", "--top-k", "--top-p", "--min-p", "--seed", "--top-logprobs",
                      "--device", "--attention-backend", "--context-length", "--log-level"},
                     {"--ignore-eos", "--json", "--help"}));
  Options o;
  if (args.has("--help")) return invalid_argument("");
  if (!args.get("--model-path")) return invalid_argument("--model-path is required");
  o.model_path = *args.get("--model-path");
  o.prompt = args.get("--prompt");
  SGL_ASSIGN_OR_RETURN(o.request.input_ids, args.get_int_list("--prompt-ids"));
  if (o.prompt.has_value() == args.has("--prompt-ids")) {
    return invalid_argument("give exactly one of --prompt and --prompt-ids");
  }
  SGL_ASSIGN_OR_RETURN(int64_t max_new, args.get_int("--max-new-tokens", 128));
  o.request.max_new_tokens = static_cast<int32_t>(max_new);
  SGL_ASSIGN_OR_RETURN(double temperature, args.get_double("--temperature", 1.0));
  SGL_ASSIGN_OR_RETURN(int64_t top_k, args.get_int("--top-k", -1));
  SGL_ASSIGN_OR_RETURN(double top_p, args.get_double("--top-p", 1.0));
  SGL_ASSIGN_OR_RETURN(double min_p, args.get_double("--min-p", 0.0));
  o.request.sampling.temperature = static_cast<float>(temperature);
  o.request.sampling.top_k = static_cast<int32_t>(top_k);
  o.request.sampling.top_p = static_cast<float>(top_p);
  o.request.sampling.min_p = static_cast<float>(min_p);
  if (args.has("--seed")) {
    SGL_ASSIGN_OR_RETURN(int64_t seed, args.get_int("--seed", 0));
    o.request.sampling.seed = static_cast<uint64_t>(seed);
  }
  SGL_ASSIGN_OR_RETURN(int64_t top_logprobs, args.get_int("--top-logprobs", 0));
  if (top_logprobs < 0) return invalid_argument("--top-logprobs must be >= 0");
  o.request.top_logprobs_num = static_cast<int32_t>(top_logprobs);
  o.request.return_logprob = top_logprobs > 0;
  o.request.ignore_eos = args.has("--ignore-eos");
  o.json = args.has("--json");
  auto device = parse_device(args.get("--device").value_or("cpu"));
  if (!device) return invalid_argument("--device expects cpu, cuda or cuda:N");
  o.runner.device = *device;
  o.runner.attention_backend = args.get("--attention-backend").value_or("auto");
  SGL_ASSIGN_OR_RETURN(o.runner.context_length, args.get_int("--context-length", 0));
  // One request: a small KV pool is enough.
  o.runner.max_batch_size = 1;
  const std::string level = args.get("--log-level").value_or("warn");
  if (level == "debug")
    set_log_level(LogLevel::kDebug);
  else if (level == "info")
    set_log_level(LogLevel::kInfo);
  else if (level == "warn")
    set_log_level(LogLevel::kWarn);
  else if (level == "error")
    set_log_level(LogLevel::kError);
  else
    return invalid_argument("--log-level expects debug, info, warn or error");
  return o;
}

int run(int argc, char** argv) {
  auto parsed = parse_options(argc, argv);
  if (!parsed.ok()) {
    if (!parsed.status().message().empty()) {
      std::cerr << "sgl-generate: " << parsed.status().message() << "\n";
    }
    std::cerr << kUsage;
    return 2;
  }
  Options& o = *parsed;

  // The tokenizer is optional when the prompt is given as ids (random test models have none).
  std::unique_ptr<tokenizer::Tokenizer> tok;
  auto tok_result = tokenizer::Tokenizer::from_dir(o.model_path);
  if (tok_result.ok()) {
    tok = std::move(tok_result).value();
  } else if (o.prompt) {
    std::cerr << "sgl-generate: " << tok_result.status().to_string() << "\n";
    return 1;
  }
  if (o.prompt) o.request.input_ids = tok->encode(*o.prompt, {});
  // Validation runs before the KV pool is sized, so an oversized request fails fast.
  o.runner.num_kv_slots = static_cast<int64_t>(o.request.input_ids.size()) +
                          std::max<int64_t>(o.request.max_new_tokens, 0) + 1;

  auto runner = runner::ModelRunner::create(o.model_path, o.runner);
  if (!runner.ok()) {
    std::cerr << "sgl-generate: " << runner.status().to_string() << "\n";
    return 1;
  }
  std::vector<int32_t> eos = (*runner)->config().eos_token_ids;
  if (tok) {
    for (int32_t id : tok->eos_token_ids()) {
      if (std::find(eos.begin(), eos.end(), id) == eos.end()) eos.push_back(id);
    }
  }
  engine::BatchGenerator generator(**runner, eos);
  auto results = generator.generate({o.request});
  if (!results.ok()) {
    std::cerr << "sgl-generate: " << results.status().to_string() << "\n";
    return 1;
  }
  const engine::GenerateResult& result = results->at(0);
  const std::string text = tok ? tok->decode(result.output_ids, {}) : std::string();
  if (!o.json) {
    std::cout << text << "\n";
    return 0;
  }
  nlohmann::ordered_json out;
  out["prompt_ids"] = o.request.input_ids;
  out["output_ids"] = result.output_ids;
  out["text"] = text;
  out["finish_reason"] = engine::finish_reason_name(result.finish_reason);
  if (o.request.top_logprobs_num > 0) {
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    for (const auto& step : result.top_logprobs) {
      nlohmann::ordered_json entries = nlohmann::ordered_json::array();
      for (const auto& e : step) entries.push_back({{"id", e.id}, {"logprob", e.logprob}});
      steps.push_back(entries);
    }
    out["logprobs"] = steps;
  }
  std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return 0;
}

}  // namespace
}  // namespace sgl::app

int main(int argc, char** argv) { return sgl::app::run(argc, argv); }
