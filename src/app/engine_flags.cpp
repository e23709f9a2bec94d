// Engine flag parsing: the table of engine and runner flags and what each sets.
#include "app/engine_flags.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <random>

#include "app/lora_flags.h"
#include "backend/devices.h"
#include "core/ascii.h"
#include "core/logging.h"
#include "distributed/bootstrap.h"
#include "distributed/nccl_communicator.h"
#include "runner/compute_dtype.h"

namespace sgl::app {
namespace {

using enum FlagSupport;

// SGLang's attention backends that are kernels for the same attention sgl.cpp computes: they
// select sgl.cpp's own choice for the device. MLA and vendor backends are refused by name.
constexpr std::array<std::string_view, 7> kSglangAttentionBackends = {
    "flashinfer", "fa3", "fa4", "triton", "torch_native", "trtllm_mha", "flex_attention"};
constexpr std::array<std::string_view, 4> kOwnAttentionBackends = {"auto", "flash", "cuda_ref",
                                                                   "cpu"};
constexpr std::array<std::string_view, 9> kUnsupportedAttentionBackends = {
    "flashmla",  "cutlass_mla", "trtllm_mla",           "aiter", "wave", "ascend",
    "intel_amx", "intel_xpu",   "dual_chunk_flash_attn"};

// --attention-backend: ours by name, SGLang's general ones as "auto", the rest refused.
Result<std::string> parse_attention_backend(const std::string& name,
                                            std::vector<std::string>& notes) {
  auto in = [&](const auto& list) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  if (in(kSglangAttentionBackends)) {
    notes.push_back("--attention-backend " + name +
                    " selects sgl.cpp's own attention kernels (flash on CUDA, cpu on the CPU)");
    return std::string("auto");
  }
  if (in(kUnsupportedAttentionBackends)) {
    return invalid_argument("--attention-backend " + name +
                            " is not supported: sgl.cpp has no MLA models or vendor kernels "
                            "(use auto, flash, cuda_ref or cpu)");
  }
  if (!in(kOwnAttentionBackends)) {  // checked here, not once the weights are loaded
    return invalid_argument("unknown --attention-backend '" + name +
                            "' (auto, flash, cuda_ref, cpu, or SGLang's flashinfer, fa3, fa4, "
                            "triton, torch_native, trtllm_mha, flex_attention)");
  }
  return name;
}

// --enable-priority-scheduling and its flags, checked as SGLang checks them (its warnings about
// flags without effect become notes).
Status read_priority_options(const CliArgs& args, scheduler::SchedulePolicy policy,
                             scheduler::PriorityOptions& out, std::vector<std::string>& notes) {
  out.enabled = args.has("--enable-priority-scheduling");
  out.low_values_first = args.has("--schedule-low-priority-values-first");
  out.preemption = !args.has("--disable-priority-preemption");
  out.abort_when_disabled = args.has("--abort-on-priority-when-disabled");
  SGL_ASSIGN_OR_RETURN(out.preemption_threshold,
                       args.get_int("--priority-scheduling-preemption-threshold", 10));
  if (args.has("--default-priority-value")) {
    SGL_ASSIGN_OR_RETURN(out.default_value, args.get_int("--default-priority-value", 0));
  }
  const std::string retraction = args.get("--retraction-policy").value_or("length");
  if (retraction != "length" && retraction != "priority") {
    return invalid_argument("--retraction-policy must be length or priority, got '" + retraction +
                            "'");
  }
  out.retract_by_priority = retraction == "priority";
  if (out.retract_by_priority && !out.enabled) {
    return invalid_argument("--retraction-policy priority requires --enable-priority-scheduling");
  }
  if (out.enabled && policy != scheduler::SchedulePolicy::kFcfs &&
      policy != scheduler::SchedulePolicy::kLof) {
    return invalid_argument(std::string("--enable-priority-scheduling takes --schedule-policy "
                                        "fcfs or lof, not ") +
                            scheduler::schedule_policy_name(policy) + " (as in SGLang)");
  }
  if (!out.enabled) {
    for (const char* flag :
         {"--disable-priority-preemption", "--default-priority-value",
          "--schedule-low-priority-values-first", "--priority-scheduling-preemption-threshold"}) {
      if (args.has(flag)) {
        notes.push_back(std::string(flag) + " has no effect without --enable-priority-scheduling");
      }
    }
  }
  return Status::ok_status();
}

// --cuda-graph-bs: the sizes captured; the largest is the cap (SGLang replaces
// --cuda-graph-max-bs with it).
Status parse_cuda_graph_bs(const CliArgs& args, EngineSetup& s) {
  if (!args.has("--cuda-graph-bs")) return Status::ok_status();
  constexpr int32_t kMaxGraphBs = 65536;
  Result<std::vector<int32_t>> sizes = args.get_int_list("--cuda-graph-bs");
  if (!sizes.ok() || std::any_of(sizes->begin(), sizes->end(),
                                 [](int32_t b) { return b < 1 || b > kMaxGraphBs; })) {
    return invalid_argument("--cuda-graph-bs sizes must be whole numbers in [1, 65536], got '" +
                            args.get("--cuda-graph-bs").value_or("") + "'");
  }
  s.runner.cuda_graph_bs = std::move(sizes).value();
  const int64_t largest =
      *std::max_element(s.runner.cuda_graph_bs.begin(), s.runner.cuda_graph_bs.end());
  if (args.has("--cuda-graph-max-bs") && s.runner.cuda_graph_max_bs != largest) {
    s.notes.push_back("--cuda-graph-max-bs " + std::to_string(s.runner.cuda_graph_max_bs) +
                      " is replaced by the largest --cuda-graph-bs size, " +
                      std::to_string(largest) + " (SGLang's rule)");
  }
  s.runner.cuda_graph_max_bs = largest;
  return Status::ok_status();
}

}  // namespace

// A timeout in seconds from the environment variable `name`, as SGLang's EnvFloat reads it
// (unset or <= 0: none).
Result<double> env_seconds(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return 0.0;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (*end != '\0' || !std::isfinite(v)) {
    return invalid_argument(std::string(name) + " must be a number of seconds, got '" + text + "'");
  }
  return std::max(v, 0.0);
}

Result<bool> env_bool(const char* name, bool default_value) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return default_value;
  const std::string value = ascii_lower(text);
  if (value == "1" || value == "true" || value == "yes" || value == "y") return true;
  if (value == "0" || value == "false" || value == "no" || value == "n") return false;
  return invalid_argument(std::string(name) + " must be a boolean (1, true, yes, y or 0, false, " +
                          "no, n), got '" + text + "'");
}

std::span<const FlagSpec> engine_flag_table() {
  static const std::vector<FlagSpec> table = {
      {.name = "--device",
       .value = "auto|cpu|cuda|cuda:N",
       .help = "Where the model runs; auto (SGLang's default) takes the GPU where one is "
               "visible, the CPU otherwise.",
       .default_value = "auto"},
      {.name = "--base-gpu-id",
       .value = "N",
       .help = "The GPU index for --device cuda (as --device cuda:N).",
       .default_value = "0"},
      {.name = "--attention-backend",
       .value = "NAME",
       .help = "auto, flash (CUDA split-KV decode and tensor-core extend), cuda_ref or cpu. "
               "SGLang's flashinfer, fa3, fa4, triton, torch_native, trtllm_mha and "
               "flex_attention mean auto; MLA and vendor backends are refused.",
       .default_value = "auto"},
      {.name = "--linear-backend",
       .value = "auto|hopper",
       .help = "hopper: our sm_90a wgmma GEMM for 17-256 tokens.",
       .default_value = "auto"},
      {.name = "--context-length",
       .value = "N",
       .help = "Longest sequence (SGLang's size suffixes: 32k, 1M, 32Ki); above the model's "
               "max_position_embeddings only with SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 in "
               "the environment.",
       .default_value = "the model's"},
      {.name = "--load-format",
       .value = "auto|safetensors|gguf|dummy",
       .help = "Weights from the model path (safetensors / gguf also check its format) or "
               "random (dummy).",
       .default_value = "auto"},
      {.name = "--json-model-override-args",
       .value = "JSON",
       .help = "A JSON object whose fields replace config.json's (SGLang's; rope_scaling and "
               "rope_parameters are merged key by key), e.g. "
               "'{\"max_position_embeddings\": 4096}'."},
      {.name = "--dtype",
       .value = "auto|bfloat16|float32",
       .help = "Compute dtype; auto is f32 on the CPU, bf16 on CUDA. half / float16 are refused "
               "(no f16 compute path).",
       .default_value = "auto"},
      {.name = "--kv-cache-dtype",
       .value = "auto|fp8_e4m3|fp8_e5m2|bfloat16",
       .help = "KV cache dtype: auto keeps the compute dtype; fp8_e4m3 / fp8_e5m2 store K and V "
               "as FP8 (half of bf16's bytes, so twice the tokens in the same memory), at the "
               "checkpoint's k_scale / v_scale where it has them, else 1.0.",
       .default_value = "auto"},
      {.name = "--cuda-graph-max-bs",
       .aliases = {"--cuda-graph-max-bs-decode"},
       .value = "N",
       .help = "Largest decode (and speculative verify) batch replayed from a CUDA graph.",
       .default_value = "256"},
      {.name = "--cuda-graph-bs",
       .aliases = {"--cuda-graph-bs-decode"},
       .value = "N...",
       .help = "The decode and verify batch sizes captured as CUDA graphs (a batch replays the "
               "smallest that holds it, padded); the largest replaces --cuda-graph-max-bs, as "
               "in SGLang.",
       .default_value = "1 2 4 8, then every multiple of 8 up to --cuda-graph-max-bs"},
      {.name = "--disable-cuda-graph",
       .aliases = {"--disable-decode-cuda-graph"},
       .help = "Run every step eagerly (sgl.cpp's graphs are decode and verify steps: SGLang "
               "0.5's --disable-decode-cuda-graph is the same)."},
      {.name = "--tp-size",
       .aliases = {"--tp", "--tensor-parallel-size"},
       .value = "N",
       .help = "Tensor-parallel ranks: the weights and KV heads split over N ranks, threads of "
               "this process (on CUDA one GPU each, cuda:B to cuda:B+N-1 from --base-gpu-id B, "
               "over NCCL; on the CPU a shared-memory group). N must divide the attention heads, "
               "the MLP widths and the vocabulary.",
       .default_value = "1"},
      {.name = "--enable-fp32-all-reduce",
       .help = "At --tp-size > 1 in bf16: the attention output and dense MLP down projections "
               "all-reduce their ranks' partial sums in f32 and round once, as one GPU does, "
               "instead of rounding each rank's share and adding in bf16 (SGLang's way; MoE "
               "blocks still do). Closer to --tp-size 1's logprobs at twice the all-reduce bytes "
               "(two H200s, a Llama-3-8B shape: decode 3-9% slower, prefill 16-20%)."},
      {.name = "--disable-custom-all-reduce",
       .help = "At --tp-size > 1 on GPUs: every all-reduce through NCCL. By default sums of up "
               "to 8 MB (a decode step's) take a kernel over the GPUs' peer memory (SGLang's "
               "custom all-reduce), which adds in f32 in rank order and rounds once."},
      {.name = "--ep-size",
       .aliases = {"--ep", "--expert-parallel-size"},
       .value = "N",
       .help = "Expert-parallel groups (MoE models): the experts split over N groups of the "
               "--tp-size ranks. On GPUs every rank runs its experts over the tokens routed to "
               "them and one all-reduce adds the ranks' outputs (SGLang's EP MoE without an "
               "all-to-all backend); on the CPU each token goes to the ranks holding its experts "
               "and back (all-to-all). N must divide --tp-size and the model's experts.",
       .default_value = "1"},
      {.name = "--nnodes",
       .value = "N",
       .help = "Nodes the --tp-size ranks split over (sgl-server; each node runs --tp-size / N "
               "ranks). Node 0 runs the scheduler and the HTTP server and sends every batch to "
               "the others; start every node with the same flags and its --node-rank.",
       .default_value = "1"},
      {.name = "--node-rank",
       .value = "N",
       .help = "This node's rank in [0, --nnodes).",
       .default_value = "0"},
      {.name = "--dist-init-addr",
       .aliases = {"--nccl-init-addr"},
       .value = "HOST:PORT",
       .help = "Node 0's address: the other nodes connect at PORT (node 0's batches) and "
               "PORT + 1 (the ranks' group: the NCCL id on GPUs, the collectives on the CPU). "
               "Needed when --nnodes > 1."},
      {.name = "--max-running-requests",
       .value = "N",
       .help = "Requests decoding at once.",
       .default_value = "256"},
      {.name = "--max-prefill-tokens",
       .value = "N",
       .help = "Prompt tokens admitted per prefill batch (size suffixes as --context-length).",
       .default_value = "16384"},
      {.name = "--chunked-prefill-size",
       .value = "N",
       .help = "Longest prefill chunk of one request; -1: no chunking (then a prompt is "
               "prefilled whole, so it may have at most --max-prefill-tokens tokens; longer ones "
               "are refused, not admitted whole as in SGLang).",
       .default_value = "8192"},
      {.name = "--schedule-policy",
       .value = "lpm|dfs-weight|fcfs|lof|random",
       .help = "Order of waiting requests.",
       .default_value = "fcfs"},
      {.name = "--enable-priority-scheduling",
       .help = "Requests' integer priority orders the waiting queue (before --schedule-policy: "
               "fcfs or lof), lets a waiting request preempt running ones it outranks and picks "
               "which request a full queue turns away. Higher values first by default."},
      {.name = "--schedule-low-priority-values-first",
       .help = "With --enable-priority-scheduling, lower priority values are scheduled first."},
      {.name = "--disable-priority-preemption",
       .help = "With --enable-priority-scheduling, no running request is preempted."},
      {.name = "--priority-scheduling-preemption-threshold",
       .value = "N",
       .help = "How far a waiting request must outrank a running one (by more than N) to preempt "
               "it.",
       .default_value = "10"},
      {.name = "--default-priority-value",
       .value = "N",
       .help = "The priority of a request that gives none (unset: the least preferred value)."},
      {.name = "--abort-on-priority-when-disabled",
       .help = "Without --enable-priority-scheduling, a request that gives a priority is aborted "
               "(503) instead of the priority having no effect."},
      {.name = "--retraction-policy",
       .value = "length|priority",
       .help = "Which running requests a full KV cache retracts first: the fewest output tokens "
               "(then the longest prompts), or with priority the least preferred priority before "
               "that (needs --enable-priority-scheduling).",
       .default_value = "length"},
      {.name = "--schedule-conservativeness",
       .value = "X",
       .help = "Scales the KV reserved for running requests' future tokens.",
       .default_value = "1.0"},
      {.name = "--max-total-tokens",
       .value = "N",
       .help = "KV cache slots (size suffixes as --context-length); 0 sizes the pool from free "
               "memory.",
       .default_value = "0"},
      {.name = "--mem-fraction-static",
       .value = "X",
       .help = "Share of device memory for weights and KV cache; 0 = the device's default.",
       .default_value = "0"},
      {.name = "--enable-memory-saver",
       .help = "The weights and the KV cache live in memory /release_memory_occupation gives "
               "back to the device and /resume_memory_occupation takes again, at the same "
               "addresses (CUDA graphs stay valid): a trainer sharing the GPU gets it meanwhile."},
      {.name = "--enable-weights-cpu-backup",
       .help = "With --enable-memory-saver: a release keeps the weights in host memory and the "
               "resume writes them back (without it, write them again after the resume: "
               "/update_weights_from_disk)."},
      {.name = "--enable-nan-detection",
       .help = "Check the logits for NaN before sampling (SGLang's): a NaN logit becomes -1e5 and "
               "a warning is logged. Every batch then samples on the host (the logits are "
               "copied from the GPU each step)."},
      {.name = "--enable-return-routed-experts",
       .help = "Serve return_routed_experts (SGLang's, a MoE model): each MoE layer's top-k "
               "expert ids at every position of a request, for rollout routing replay. Such "
               "requests compute their whole prompt (no prefix cache match), run without CUDA "
               "graphs and decode without drafts."},
      {.name = "--max-queued-requests",
       .value = "N",
       .help = "Waiting requests before new ones are refused (503), counted as N plus "
               "--max-running-requests waiting or running; 0 = unbounded.",
       .default_value = "0"},
      {.name = "--random-seed",
       .value = "N",
       .help = "Makes runs reproducible: requests without a seed sample with one derived from "
               "N and their request id (and the random schedule policy shuffles by N); "
               "unset: from the OS's entropy."},
      {.name = "--log-level",
       .value = "debug|info|warning|error|critical (any case)",
       .help = "Least severe log line printed.",
       .default_value = "info for sgl-server, warning for the other tools"},
      {.name = "--disable-radix-cache", .help = "No prefix reuse between requests."},
      {.name = "--enable-mixed-chunk",
       .help = "Batches carry prefill chunks beside running decodes (on by default here)."},
      {.name = "--disable-mixed-chunk", .help = "Prefill batches without decodes."},
      {.name = "--mixed-chunk-size",
       .value = "N",
       .help = "Tokens of a batch that carries decodes, the decodes counted.",
       .default_value = "1280"},
      {.name = "--disable-overlap-schedule",
       .help = "Schedule the next batch only after the last one finished."},
      {.name = "--speculative-algorithm",
       .value = "EAGLE|EAGLE3|NGRAM",
       .help = "Speculative decoding (same tokens, fewer steps; verify steps drain the overlap "
               "loop): EAGLE / EAGLE3 draft with a draft head (--speculative-draft-model-path), "
               "NGRAM looks drafts up in each request's own prompt and output."},
      {.name = "--speculative-draft-model-path",
       .aliases = {"--speculative-draft-model"},
       .value = "DIR",
       .help = "EAGLE / EAGLE3: the draft head (LlamaForCausalLMEagle / LlamaForCausalLMEagle3 "
               "config.json + safetensors)."},
      {.name = "--speculative-num-steps",
       .value = "N",
       .help = "EAGLE / EAGLE3: draft steps (drafts) per verify.",
       .default_value = "3"},
      {.name = "--speculative-eagle-topk",
       .value = "N",
       .help = "EAGLE / EAGLE3: branches per draft step (1..10): 1 drafts a chain, more a "
               "tree.",
       .default_value = "1"},
      {.name = "--speculative-num-draft-tokens",
       .value = "N",
       .help = "Tokens verified per request and step, the last sampled one included (EAGLE "
               "with topk 1: --speculative-num-steps + 1; a tree: 2 .. 1 + num-steps * topk, "
               "default 8 cut to that).",
       .default_value = "8 (NGRAM)"},
      {.name = "--speculative-draft-policy",
       .value = "adaptive|fixed",
       .help = "adaptive: the drafts each decode step verifies (0 .. num-draft-tokens - 1) are "
               "chosen per batch size from the measured tokens/s of each count, so speculation "
               "never stays slower than plain decoding; fixed: always num-draft-tokens - 1.",
       .default_value = "adaptive"},
      {.name = "--speculative-ngram-min-match-window-size",
       .value = "N",
       .help = "Shortest suffix the NGRAM lookup matches.",
       .default_value = "1"},
      {.name = "--speculative-ngram-max-match-window-size",
       .value = "N",
       .help = "Longest suffix the NGRAM lookup matches (tried first).",
       .default_value = "12"},
      {.name = "--decode-log-interval",
       .value = "N",
       .help = "Decode steps between the info-level \"Decode batch.\" status lines (each prefill "
               "batch logs one too); 0: none.",
       .default_value = "40"},
      {.name = "--enable-lora",
       .help = "Serve LoRA adapters (SGLang's; implied by --lora-paths): a request names one by "
               "lora_path, or on the OpenAI routes by model \"<base>:<adapter>\"; "
               "/load_lora_adapter and /unload_lora_adapter change them while the server runs. "
               "For a dense model at one rank, so far."},
      {.name = "--lora-paths",
       .value = "NAME=PATH...",
       .help = "PEFT LoRA adapters to load at start (adapter_config.json and "
               "adapter_model.safetensors): NAME=PATH, PATH (named by itself) or JSON "
               "{\"lora_name\": ..., \"lora_path\": ..., \"pinned\": ...} (a pinned adapter "
               "is never unloaded to make room). Each caches its prompts' prefixes apart."},
      {.name = "--max-loras-per-batch",
       .value = "N",
       .help = "Distinct adapters one batch runs, the base model counted as one; a request of "
               "another adapter waits.",
       .default_value = "8"},
      {.name = "--max-lora-rank",
       .value = "N",
       .help = "Adapters of a larger rank are refused; 0: the largest of --lora-paths' (then "
               "needed beside --enable-lora without --lora-paths)."},
      {.name = "--lora-target-modules",
       .value = "MODULE...",
       .help = "The modules adapters may target (q_proj, k_proj, v_proj, o_proj, gate_proj, "
               "up_proj, down_proj, or all); an adapter targeting another is refused at start.",
       .default_value = "all"},
      {.name = "--max-loaded-loras",
       .value = "N",
       .help = "Adapters held in memory (at least --max-loras-per-batch and the --lora-paths "
               "ones): a /load_lora_adapter past it unloads the least recently used adapter "
               "not pinned first."},
      {.name = "--watchdog-timeout",
       .value = "SECONDS",
       .help = "End the server (exit status 1) when batches are in flight and none finishes for "
               "this long, after logging what ran: a hung GPU or collective gets the server "
               "restarted instead of it answering /health; 0: no watchdog. On the CPU it is off "
               "unless given (a large model's prefill there may take minutes).",
       .default_value = "300 (cuda), 0 (cpu)"},
      {.name = "--soft-watchdog-timeout",
       .value = "SECONDS",
       .help = "Log what ran when batches are in flight and none finishes for this long, and go "
               "on (again after each further timeout); 0: none.",
       .default_value = "0"},
  };
  return table;
}

const std::set<std::string>& engine_value_flags() {
  static const std::set<std::string> flags = flag_sets({engine_flag_table()}).values;
  return flags;
}

const std::set<std::string>& engine_switch_flags() {
  static const std::set<std::string> flags = flag_sets({engine_flag_table()}).switches;
  return flags;
}

const std::string& engine_flags_usage() {
  static const std::string usage =
      format_flag_help("engine flags (SGLang's names)", engine_flag_table());
  return usage;
}

std::vector<std::string> all_reduce_notes(const runner::ModelRunnerOptions& runner) {
  std::vector<std::string> notes;
  const Result<DType> dtype = runner::parse_compute_dtype(runner.dtype, runner.device);
  const bool f32 = dtype.ok() && *dtype == DType::kF32;  // a bad --dtype fails at load
  if (runner.fp32_all_reduce && (runner.tp_size == 1 || f32)) {
    notes.push_back(
        "--enable-fp32-all-reduce changes nothing here: it applies at --tp-size > 1 in bf16 (in "
        "float32 the all-reduce already adds f32)");
  }
  if (runner.disable_custom_all_reduce && (runner.tp_size == 1 || runner.device.is_cpu())) {
    notes.push_back(
        "--disable-custom-all-reduce changes nothing here: the custom all-reduce runs between "
        "GPUs at --tp-size > 1 (the CPU's ranks add in shared memory)");
  }
  return notes;
}

std::string resolve_device_name(const std::string& name, int64_t base_gpu,
                                std::vector<std::string>& notes) {
  if (name != "auto") return name;
  const int gpus = backend::cuda_device_count();
  if (gpus > 0 || base_gpu != 0) {
    notes.push_back("--device auto: running on cuda (" +
                    (gpus > 0 ? std::to_string(gpus) + " CUDA device(s) visible"
                              : "--base-gpu-id " + std::to_string(base_gpu) + " names a GPU") +
                    ")");
    return "cuda";
  }
  return "cpu";  // as before --device auto existed: nothing to say
}

Result<EngineSetup> parse_engine_flags(const CliArgs& args, const std::string& default_log_level) {
  EngineSetup s;
  SGL_ASSIGN_OR_RETURN(const int64_t base_gpu, args.get_int("--base-gpu-id", 0));
  const std::string device_name =
      resolve_device_name(args.get("--device").value_or("auto"), base_gpu, s.notes);
  auto device = parse_device(device_name);
  if (!device) return invalid_argument("--device expects auto, cpu, cuda or cuda:N");
  if (base_gpu != 0) {  // 0 (SGLang's default) asks for nothing on any device
    if (!device->is_cuda() || base_gpu < 0 || base_gpu > 1023) {
      return invalid_argument("--base-gpu-id needs --device cuda and an index in [0, 1023]");
    }
    if (device_name != "cuda" && device->index != base_gpu) {
      return invalid_argument("--base-gpu-id " + std::to_string(base_gpu) +
                              " contradicts --device " + device_name);
    }
    device = Device::cuda(static_cast<int>(base_gpu));
  }
  s.runner.device = *device;
  SGL_ASSIGN_OR_RETURN(const int64_t tp_size, args.get_int("--tp-size", 1));
  if (tp_size < 1 || tp_size > 64) return invalid_argument("--tp-size must be in [1, 64]");
  if (tp_size > 1 && !device->is_cpu() && !distributed::nccl_available()) {
    return invalid_argument("--tp-size " + std::to_string(tp_size) + " on " + device_name +
                            " needs NCCL: " + distributed::nccl_unavailable_reason() +
                            " (--device cpu runs it over shared memory)");
  }
  s.runner.tp_size = static_cast<int>(tp_size);
  SGL_ASSIGN_OR_RETURN(const int64_t ep_size, args.get_int("--ep-size", 1));
  if (ep_size < 1 || ep_size > 64) return invalid_argument("--ep-size must be in [1, 64]");
  // Serving across nodes (SGLang's names): checked here; sgl-server runs it, the other tools
  // refuse it (check_single_node).
  distributed::MultiNode& nodes = s.nodes;
  SGL_ASSIGN_OR_RETURN(const int64_t nnodes, args.get_int("--nnodes", 1));
  SGL_ASSIGN_OR_RETURN(const int64_t node_rank, args.get_int("--node-rank", 0));
  if (nnodes < 1 || nnodes > 4096) return invalid_argument("--nnodes must be in [1, 4096]");
  nodes.nnodes = static_cast<int>(nnodes);
  nodes.node_rank = static_cast<int>(std::clamp<int64_t>(node_rank, -1, 1 << 20));
  if (const auto addr = args.get("--dist-init-addr")) {
    SGL_ASSIGN_OR_RETURN(nodes.dist_init_addr, distributed::parse_dist_init_addr(*addr));
  }
  SGL_RETURN_IF_ERROR(distributed::check_multi_node(nodes));
  s.runner.ep_size = static_cast<int>(ep_size);
  SGL_ASSIGN_OR_RETURN(
      s.runner.attention_backend,
      parse_attention_backend(args.get("--attention-backend").value_or("auto"), s.notes));
  s.runner.linear_backend = args.get("--linear-backend").value_or("auto");
  s.runner.load_format = args.get("--load-format").value_or("auto");
  s.runner.json_model_override_args = args.get("--json-model-override-args").value_or("");
  s.runner.dtype = args.get("--dtype").value_or("auto");
  if (s.runner.dtype == "half") s.runner.dtype = "float16";
  s.runner.kv_cache_dtype = args.get("--kv-cache-dtype").value_or("auto");
  // SGLang 0.5's --cuda-graph-backend-decode disabled (sglang_flags.cpp) is the same switch.
  s.runner.disable_cuda_graph =
      args.has("--disable-cuda-graph") || args.get("--cuda-graph-backend-decode") == "disabled";
  s.runner.enable_memory_saver = args.has("--enable-memory-saver");
  s.runner.enable_weights_cpu_backup = args.has("--enable-weights-cpu-backup");
  s.runner.enable_return_routed_experts = args.has("--enable-return-routed-experts");
  s.runner.enable_nan_detection = args.has("--enable-nan-detection");
  if (s.runner.enable_weights_cpu_backup && !s.runner.enable_memory_saver) {
    s.notes.push_back(
        "--enable-weights-cpu-backup changes nothing without --enable-memory-saver (nothing is "
        "released)");
  }
  s.runner.fp32_all_reduce = args.has("--enable-fp32-all-reduce");
  s.runner.disable_custom_all_reduce = args.has("--disable-custom-all-reduce");
  for (std::string& note : all_reduce_notes(s.runner)) s.notes.push_back(std::move(note));
  SGL_ASSIGN_OR_RETURN(s.runner.cuda_graph_max_bs, args.get_int("--cuda-graph-max-bs", 256));
  if (s.runner.cuda_graph_max_bs < 1) return invalid_argument("--cuda-graph-max-bs must be >= 1");
  SGL_RETURN_IF_ERROR(parse_cuda_graph_bs(args, s));
  SGL_ASSIGN_OR_RETURN(s.runner.context_length, args.get_human_int("--context-length", 0));
  // SGLang's switch for a context past the model's trained length (RoPE beyond its positions).
  SGL_ASSIGN_OR_RETURN(s.runner.allow_longer_context,
                       env_bool("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", false));
  SGL_ASSIGN_OR_RETURN(s.runner.num_kv_slots, args.get_human_int("--max-total-tokens", 0));
  SGL_ASSIGN_OR_RETURN(s.runner.mem_fraction_static, args.get_double("--mem-fraction-static", 0));
  if (s.runner.context_length < 0 || s.runner.num_kv_slots < 0 ||
      !(s.runner.mem_fraction_static >= 0 && s.runner.mem_fraction_static < 1)) {
    return invalid_argument(
        "--context-length and --max-total-tokens must be >= 0 and "
        "--mem-fraction-static in [0, 1) (0 = the device's default)");
  }
  scheduler::SchedulerOptions& o = s.engine.scheduler;
  SGL_ASSIGN_OR_RETURN(int64_t running, args.get_int("--max-running-requests", 256));
  SGL_ASSIGN_OR_RETURN(o.max_prefill_tokens, args.get_human_int("--max-prefill-tokens", 16384));
  SGL_ASSIGN_OR_RETURN(o.chunked_prefill_size, args.get_int("--chunked-prefill-size", 8192));
  SGL_ASSIGN_OR_RETURN(o.schedule_conservativeness,
                       args.get_double("--schedule-conservativeness", 1.0));
  SGL_ASSIGN_OR_RETURN(o.max_queued_requests, args.get_int("--max-queued-requests", 0));
  // SGLang's request timeouts: a request waiting or running longer ends as a 503.
  SGL_ASSIGN_OR_RETURN(o.waiting_timeout_s, env_seconds("SGLANG_REQ_WAITING_TIMEOUT"));
  SGL_ASSIGN_OR_RETURN(o.running_timeout_s, env_seconds("SGLANG_REQ_RUNNING_TIMEOUT"));
  SGL_ASSIGN_OR_RETURN(int64_t seed, args.get_int("--random-seed", 0));
  if (running < 1 || running > 65536 || o.max_prefill_tokens < 1) {
    return invalid_argument("--max-running-requests and --max-prefill-tokens must be positive");
  }
  // SGLang's bound: 0 reserves nothing for running requests' future tokens.
  if (o.schedule_conservativeness < 0) {
    return invalid_argument("--schedule-conservativeness must be >= 0");
  }
  if (o.max_queued_requests < 0) return invalid_argument("--max-queued-requests must be >= 0");
  // Token counts past 2^30 mean "no limit" to nobody: they only overflow the budgets' sums.
  constexpr int64_t kMaxTokenCount = int64_t{1} << 30;
  if (o.max_prefill_tokens > kMaxTokenCount || o.chunked_prefill_size > kMaxTokenCount ||
      s.runner.num_kv_slots > kMaxTokenCount || s.runner.context_length > kMaxTokenCount) {
    return invalid_argument(
        "--max-prefill-tokens, --chunked-prefill-size, --max-total-tokens and --context-length "
        "must be at most 2^30 (1Gi)");
  }
  if (seed < 0) return invalid_argument("--random-seed must be >= 0 (as numpy's seed)");
  o.max_running_requests = static_cast<int32_t>(running);
  if (args.has("--random-seed")) {
    o.random_seed = static_cast<uint64_t>(seed);
    s.engine.unseeded_sampling_seed = o.random_seed;
  } else {
    o.random_seed = std::random_device{}();  // the OS's entropy, as SGLang draws its seed
  }
  SGL_ASSIGN_OR_RETURN(
      o.policy, scheduler::parse_schedule_policy(args.get("--schedule-policy").value_or("fcfs")));
  o.disable_radix_cache = args.has("--disable-radix-cache");
  SGL_RETURN_IF_ERROR(read_priority_options(args, o.policy, o.priority, s.notes));
  // --enable-mixed-chunk is the default; SGLang's flag stays accepted.
  if (args.has("--enable-mixed-chunk") && args.has("--disable-mixed-chunk")) {
    return invalid_argument("--enable-mixed-chunk and --disable-mixed-chunk contradict each other");
  }
  o.enable_mixed_chunk = !args.has("--disable-mixed-chunk");
  SGL_ASSIGN_OR_RETURN(o.mixed_chunk_size, args.get_int("--mixed-chunk-size", 1280));
  if (o.mixed_chunk_size < 1) return invalid_argument("--mixed-chunk-size must be positive");
  s.engine.disable_overlap_schedule = args.has("--disable-overlap-schedule");
  speculative::SpeculativeOptions& spec = o.speculative;
  if (const auto algorithm = args.get("--speculative-algorithm")) {
    SGL_ASSIGN_OR_RETURN(spec.algorithm, speculative::parse_speculative_algorithm(*algorithm));
  }
  SGL_ASSIGN_OR_RETURN(const int64_t draft_tokens,
                       args.get_int("--speculative-num-draft-tokens", spec.num_draft_tokens));
  spec.draft_model_path = args.get("--speculative-draft-model-path").value_or("");
  SGL_ASSIGN_OR_RETURN(const int64_t num_steps,
                       args.get_int("--speculative-num-steps", spec.num_steps));
  SGL_ASSIGN_OR_RETURN(const int64_t topk,
                       args.get_int("--speculative-eagle-topk", spec.eagle_topk));
  spec.num_steps = static_cast<int32_t>(std::clamp<int64_t>(num_steps, -1, 1 << 20));
  spec.eagle_topk = static_cast<int32_t>(std::clamp<int64_t>(topk, -1, 1 << 20));
  SGL_ASSIGN_OR_RETURN(
      const int64_t min_window,
      args.get_int("--speculative-ngram-min-match-window-size", spec.ngram_min_match_window));
  SGL_ASSIGN_OR_RETURN(
      const int64_t max_window,
      args.get_int("--speculative-ngram-max-match-window-size", spec.ngram_max_match_window));
  spec.num_draft_tokens = static_cast<int32_t>(std::clamp<int64_t>(draft_tokens, -1, 1 << 20));
  spec.ngram_min_match_window = static_cast<int32_t>(std::clamp<int64_t>(min_window, -1, 1 << 20));
  spec.ngram_max_match_window = static_cast<int32_t>(std::clamp<int64_t>(max_window, -1, 1 << 20));
  const std::string policy = args.get("--speculative-draft-policy").value_or("adaptive");
  if (policy != "adaptive" && policy != "fixed") {
    return invalid_argument("--speculative-draft-policy must be adaptive or fixed, got '" + policy +
                            "'");
  }
  if (args.has("--speculative-draft-policy") && !spec.enabled()) {
    return invalid_argument("--speculative-draft-policy needs --speculative-algorithm");
  }
  spec.adaptive_drafts = policy == "adaptive";
  SGL_RETURN_IF_ERROR(spec.validate(args.has("--speculative-num-draft-tokens")));
  if (!spec.drafts_in_runner() &&
      (args.has("--speculative-num-steps") || args.has("--speculative-eagle-topk") ||
       args.has("--speculative-draft-model-path"))) {
    return invalid_argument(
        "--speculative-draft-model-path, --speculative-num-steps and --speculative-eagle-topk are "
        "for --speculative-algorithm EAGLE / EAGLE3");
  }
  SGL_RETURN_IF_ERROR(
      parse_lora_flags(args, spec.enabled(), s.runner, s.engine.scheduler, s.notes));
  SGL_ASSIGN_OR_RETURN(s.engine.decode_log_interval, args.get_int("--decode-log-interval", 40));
  if (s.engine.decode_log_interval < 0) {
    return invalid_argument("--decode-log-interval must be >= 0");
  }
  // SGLang's default is for GPUs; a CPU step of a large model may legitimately take minutes.
  const double default_watchdog_s = s.runner.device.is_cpu() ? 0 : 300;
  SGL_ASSIGN_OR_RETURN(s.engine.watchdog_timeout_s,
                       args.get_double("--watchdog-timeout", default_watchdog_s));
  SGL_ASSIGN_OR_RETURN(s.engine.soft_watchdog_timeout_s,
                       args.get_double("--soft-watchdog-timeout", 0));
  for (const double t : {s.engine.watchdog_timeout_s, s.engine.soft_watchdog_timeout_s}) {
    if (!(t >= 0 && t <= 1e9)) {
      return invalid_argument(
          "--watchdog-timeout and --soft-watchdog-timeout must be in [0, 1e9] "
          "seconds");
    }
  }

  SGL_RETURN_IF_ERROR(apply_log_level(args, default_log_level));
  return s;
}

Status apply_log_level(const CliArgs& args, const std::string& default_log_level) {
  auto level = parse_log_level(args.get("--log-level").value_or(default_log_level));
  if (!level.ok()) return invalid_argument("--log-level: " + level.status().message());
  set_log_level(*level);
  return Status::ok_status();
}

}  // namespace sgl::app
