// Engine flag parsing.
#include "app/engine_flags.h"

#include "core/logging.h"

namespace sgl::app {

const std::set<std::string>& engine_value_flags() {
  static const std::set<std::string> flags = {"--device",
                                              "--attention-backend",
                                              "--linear-backend",
                                              "--context-length",
                                              "--load-format",
                                              "--dtype",
                                              "--cuda-graph-max-bs",
                                              "--max-running-requests",
                                              "--max-prefill-tokens",
                                              "--chunked-prefill-size",
                                              "--schedule-policy",
                                              "--schedule-conservativeness",
                                              "--max-total-tokens",
                                              "--mem-fraction-static",
                                              "--max-queued-requests",
                                              "--random-seed",
                                              "--mixed-chunk-size",
                                              "--log-level"};
  return flags;
}

const std::set<std::string>& engine_switch_flags() {
  static const std::set<std::string> flags = {"--disable-radix-cache", "--enable-mixed-chunk",
                                              "--disable-mixed-chunk", "--disable-overlap-schedule",
                                              "--disable-cuda-graph"};
  return flags;
}

const char* engine_flags_usage() {
  return R"(engine flags (SGLang's names):
  --device cpu|cuda[:N]        --attention-backend NAME     --context-length N
  --load-format auto|dummy     --dtype auto|bfloat16|float32 (auto: cpu f32, cuda bf16)
  --linear-backend auto|hopper (hopper: our sm_90a GEMM for 17-256 tokens)
  --max-running-requests N     --max-prefill-tokens N
  --chunked-prefill-size N     --schedule-policy lpm|dfs-weight|fcfs|lof|random
  --schedule-conservativeness X  --max-total-tokens N (KV slots)  --mem-fraction-static X
  --max-queued-requests N      --random-seed N              --log-level debug|info|warn|error
  --disable-radix-cache        --disable-overlap-schedule   --disable-mixed-chunk
  --mixed-chunk-size N (1280: tokens of a batch that carries decodes, decodes counted; mixing
                       is on by default, SGLang's --enable-mixed-chunk is accepted)
  --cuda-graph-max-bs N (256)  --disable-cuda-graph
)";
}

Result<EngineSetup> parse_engine_flags(const CliArgs& args) {
  EngineSetup s;
  auto device = parse_device(args.get("--device").value_or("cpu"));
  if (!device) return invalid_argument("--device expects cpu, cuda or cuda:N");
  s.runner.device = *device;
  s.runner.attention_backend = args.get("--attention-backend").value_or("auto");
  s.runner.linear_backend = args.get("--linear-backend").value_or("auto");
  s.runner.load_format = args.get("--load-format").value_or("auto");
  s.runner.dtype = args.get("--dtype").value_or("auto");
  s.runner.disable_cuda_graph = args.has("--disable-cuda-graph");
  SGL_ASSIGN_OR_RETURN(s.runner.cuda_graph_max_bs, args.get_int("--cuda-graph-max-bs", 256));
  if (s.runner.cuda_graph_max_bs < 1) return invalid_argument("--cuda-graph-max-bs must be >= 1");
  SGL_ASSIGN_OR_RETURN(s.runner.context_length, args.get_int("--context-length", 0));
  SGL_ASSIGN_OR_RETURN(s.runner.num_kv_slots, args.get_int("--max-total-tokens", 0));
  SGL_ASSIGN_OR_RETURN(s.runner.mem_fraction_static, args.get_double("--mem-fraction-static", 0));
  if (s.runner.context_length < 0 || s.runner.num_kv_slots < 0 ||
      !(s.runner.mem_fraction_static >= 0 && s.runner.mem_fraction_static < 1)) {
    return invalid_argument(
        "--context-length and --max-total-tokens must be >= 0 and "
        "--mem-fraction-static in [0, 1) (0 = the device's default)");
  }
  scheduler::SchedulerOptions& o = s.engine.scheduler;
  SGL_ASSIGN_OR_RETURN(int64_t running, args.get_int("--max-running-requests", 256));
  SGL_ASSIGN_OR_RETURN(o.max_prefill_tokens, args.get_int("--max-prefill-tokens", 16384));
  SGL_ASSIGN_OR_RETURN(o.chunked_prefill_size, args.get_int("--chunked-prefill-size", 8192));
  SGL_ASSIGN_OR_RETURN(o.schedule_conservativeness,
                       args.get_double("--schedule-conservativeness", 1.0));
  SGL_ASSIGN_OR_RETURN(o.max_queued_requests, args.get_int("--max-queued-requests", 0));
  SGL_ASSIGN_OR_RETURN(int64_t seed, args.get_int("--random-seed", 0));
  if (running < 1 || running > 65536 || o.max_prefill_tokens < 1 ||
      o.schedule_conservativeness <= 0 || o.max_queued_requests < 0) {
    return invalid_argument(
        "--max-running-requests, --max-prefill-tokens and "
        "--schedule-conservativeness must be positive");
  }
  o.max_running_requests = static_cast<int32_t>(running);
  o.random_seed = static_cast<uint64_t>(seed);
  SGL_ASSIGN_OR_RETURN(
      o.policy, scheduler::parse_schedule_policy(args.get("--schedule-policy").value_or("fcfs")));
  o.disable_radix_cache = args.has("--disable-radix-cache");
  // --enable-mixed-chunk is the default; SGLang's flag stays accepted.
  if (args.has("--enable-mixed-chunk") && args.has("--disable-mixed-chunk")) {
    return invalid_argument("--enable-mixed-chunk and --disable-mixed-chunk contradict each other");
  }
  o.enable_mixed_chunk = !args.has("--disable-mixed-chunk");
  SGL_ASSIGN_OR_RETURN(o.mixed_chunk_size, args.get_int("--mixed-chunk-size", 1280));
  if (o.mixed_chunk_size < 1) return invalid_argument("--mixed-chunk-size must be positive");
  s.engine.disable_overlap_schedule = args.has("--disable-overlap-schedule");

  const std::string level = args.get("--log-level").value_or("warn");
  if (level == "debug") {
    set_log_level(LogLevel::kDebug);
  } else if (level == "info") {
    set_log_level(LogLevel::kInfo);
  } else if (level == "warn") {
    set_log_level(LogLevel::kWarn);
  } else if (level == "error") {
    set_log_level(LogLevel::kError);
  } else {
    return invalid_argument("--log-level expects debug, info, warn or error");
  }
  return s;
}

}  // namespace sgl::app
