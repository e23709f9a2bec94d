// sgl-bench serving: flags (SGLang bench_serving's names) -> ServingConfig -> run -> report.

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>

#include "app/bench_commands.h"
#include "app/cli_args.h"
#include "bench_serving/report.h"
#include "bench_serving/serving_benchmark.h"
#include "core/open_file_limit.h"

namespace sgl::app {
namespace {

using bench_serving::ServingConfig;

constexpr const char* kUsage = R"(usage: sgl-bench serving [flags]
  --backend NAME            sglang|sglang-native (/generate), sglang-oai|vllm|openai|lmdeploy
                            (/v1/completions), sglang-oai-chat|vllm-chat|openai-chat|lmdeploy-chat
                            (/v1/chat/completions)  [sglang]
  --base-url URL            http://host:port[/prefix]; else --host [127.0.0.1] --port [30000]
  --model NAME              [the first id of GET /v1/models]
  --api-key KEY             [$OPENAI_API_KEY]
  --dataset-name NAME       random | sharegpt-synthetic  [random]
  --num-prompts N           [1000]
  --random-input-len N      [1024]   --random-output-len N  [1024]
  --random-range-ratio X    lengths uniform in [len * X, len]  [0.0]
  --sharegpt-output-len N   fixed output length (sharegpt-synthetic)
  --sharegpt-context-len N  input + output must fit (sharegpt-synthetic)
  --request-rate R          Poisson arrivals per second; inf = all at once  [inf]
  --max-concurrency N       requests in flight at most  [no limit]
  --duration S              keep sending Poisson arrivals for S seconds (needs a finite rate)
  --seed N                  [1]
  --warmup-requests N       not measured  [1]
  --request-timeout S       per request; 0 = none  [0]
  --client-threads N        threads reading the responses  [4]
  --disable-stream          --disable-ignore-eos
  --extra-request-body JSON merged into every request body
  --output-file FILE        append the result as one JSON line
  --output-details          add per-request lists to the JSON line
exit status: 0 all requests succeeded, 3 some failed, 1 setup error, 2 bad flags
)";

Result<double> parse_rate(const CliArgs& args) {
  const auto text = args.get("--request-rate");
  if (!text || *text == "inf") return std::numeric_limits<double>::infinity();
  return args.get_double("--request-rate", 0);
}

Result<ServingConfig> parse_config(const CliArgs& args) {
  ServingConfig c;
  c.backend = args.get("--backend").value_or("sglang");
  if (auto url = args.get("--base-url")) {
    SGL_ASSIGN_OR_RETURN(c.endpoint, bench_serving::parse_base_url(*url));
  } else {
    c.endpoint.host = args.get("--host").value_or("127.0.0.1");
    SGL_ASSIGN_OR_RETURN(int64_t port, args.get_int("--port", 30000));
    if (port < 1 || port > 65535) return invalid_argument("--port must be in [1, 65535]");
    c.endpoint.port = std::to_string(port);
  }
  c.model = args.get("--model").value_or("");
  const char* env_key = std::getenv("OPENAI_API_KEY");
  c.api_key = args.get("--api-key").value_or(env_key != nullptr ? env_key : "");
  bench_serving::DatasetOptions& d = c.dataset;
  SGL_ASSIGN_OR_RETURN(
      d.name, bench_serving::parse_dataset_name(args.get("--dataset-name").value_or("random")));
  SGL_ASSIGN_OR_RETURN(d.random_input_len, args.get_int("--random-input-len", 1024));
  SGL_ASSIGN_OR_RETURN(d.random_output_len, args.get_int("--random-output-len", 1024));
  SGL_ASSIGN_OR_RETURN(d.random_range_ratio, args.get_double("--random-range-ratio", 0.0));
  if (args.has("--sharegpt-output-len")) {
    SGL_ASSIGN_OR_RETURN(d.sharegpt_output_len, args.get_int("--sharegpt-output-len", 0));
  }
  if (args.has("--sharegpt-context-len")) {
    SGL_ASSIGN_OR_RETURN(d.sharegpt_context_len, args.get_int("--sharegpt-context-len", 0));
  }
  SGL_ASSIGN_OR_RETURN(int64_t seed, args.get_int("--seed", 1));
  d.seed = static_cast<uint64_t>(seed);
  SGL_ASSIGN_OR_RETURN(c.num_prompts, args.get_int("--num-prompts", 1000));
  SGL_ASSIGN_OR_RETURN(c.request_rate, parse_rate(args));
  if (args.has("--max-concurrency")) {
    SGL_ASSIGN_OR_RETURN(c.max_concurrency, args.get_int("--max-concurrency", 0));
  }
  if (args.has("--duration")) {
    SGL_ASSIGN_OR_RETURN(c.duration_s, args.get_double("--duration", 0));
  }
  SGL_ASSIGN_OR_RETURN(c.warmup_requests, args.get_int("--warmup-requests", 1));
  SGL_ASSIGN_OR_RETURN(c.client_threads, args.get_int("--client-threads", 4));
  SGL_ASSIGN_OR_RETURN(c.request_timeout_s, args.get_double("--request-timeout", 0));
  c.stream = !args.has("--disable-stream");
  c.ignore_eos = !args.has("--disable-ignore-eos");
  c.extra_request_body = args.get("--extra-request-body").value_or("");
  SGL_RETURN_IF_ERROR(bench_serving::validate_serving_config(c));
  return c;
}

}  // namespace

int run_bench_serving(int argc, char** argv) {
  const std::set<std::string> values = {"--backend",
                                        "--base-url",
                                        "--host",
                                        "--port",
                                        "--model",
                                        "--api-key",
                                        "--dataset-name",
                                        "--num-prompts",
                                        "--random-input-len",
                                        "--random-output-len",
                                        "--random-range-ratio",
                                        "--sharegpt-output-len",
                                        "--sharegpt-context-len",
                                        "--request-rate",
                                        "--max-concurrency",
                                        "--duration",
                                        "--seed",
                                        "--warmup-requests",
                                        "--client-threads",
                                        "--request-timeout",
                                        "--extra-request-body",
                                        "--output-file"};
  const std::set<std::string> switches = {"--help", "--disable-stream", "--disable-ignore-eos",
                                          "--output-details"};
  auto args = CliArgs::parse(argc, argv, values, switches);
  if (args.ok() && args->has("--help")) {
    std::cout << kUsage;
    return 0;
  }
  Result<ServingConfig> config =
      args.ok() ? parse_config(*args) : Result<ServingConfig>(args.status());
  if (!config.ok()) {
    std::cerr << "sgl-bench serving: " << config.status().message() << "\n" << kUsage;
    return 2;
  }
  raise_open_file_limit();
  auto run = bench_serving::run_serving_benchmark(*config, std::cerr);
  if (!run.ok()) {
    std::cerr << "sgl-bench serving: " << run.status().to_string() << "\n";
    return 1;
  }
  std::cout << bench_serving::format_result_table(*config, *run) << std::flush;
  if (auto path = args->get("--output-file")) {
    std::ofstream out(*path, std::ios::app);
    out << bench_serving::format_result_json(*config, *run, args->has("--output-details")) << "\n";
    if (!out) {
      std::cerr << "sgl-bench serving: cannot write " << *path << "\n";
      return 1;
    }
  }
  return run->metrics.failed == 0 ? 0 : 3;
}

}  // namespace sgl::app
