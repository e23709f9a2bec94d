// sgl-bench one-batch: one static batch straight through the ModelRunner (no scheduler, no HTTP),
// like SGLang's bench_one_batch: prefill bs x input_len tokens, then output_len decode steps,
// each a forward pass plus greedy sampling and the download of the sampled ids, pipelined as the
// engine's overlap loop runs them (a GPU runner: ModelRunner::launch_forward_and_sample).
// Every result is printed next to its floor (METHOD.md): decode against the bytes a step must
// read (weights + KV) over the measured copy bandwidth, prefill against its FLOPs over the
// measured bf16 GEMM rate. With --tp-size N every rank (a GPU, as sgl-server --tp-size runs
// them) runs the batch on a thread of its own; the times are rank 0's and the floors each GPU's
// share: its 1/N of the weights and its KV heads over one GPU's bandwidth, 1/N of the FLOPs over
// one GPU's GEMM rate (the all-reduces between the ranks are inside the measured time, not in
// the floor).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "app/bench_commands.h"
#include "app/bench_model_source.h"
#include "app/cli_args.h"
#include "app/device_floors.h"
#include "app/engine_flags.h"
#include "backend/backend.h"
#include "backend/devices.h"
#include "cache/req_to_token_pool.h"
#include "cache/token_to_kv_pool_allocator.h"
#include "model/tensor_parallel.h"
#include "runner/forward_batch_builder.h"
#include "runner/model_runner.h"
#include "runner/tp_worker_group.h"

namespace sgl::app {
namespace {

constexpr const char* kUsage =
    R"(usage: sgl-bench one-batch (--model-path DIR|FILE.gguf | --config CONFIG.json)
  [--load-format auto|dummy] [--dtype auto|bfloat16|float32] [--device auto|cuda|cpu]
  [--kv-cache-dtype auto|fp8_e4m3|fp8_e5m2]
  [--batch-size 1,8,64,256] [--input-len 128,1024] [--output-len 256]
  [--max-prefill-tokens 8192] [--attention-backend NAME] [--linear-backend auto|hopper]
  [--tp-size N] [--ep-size E] [--base-gpu-id B] [--output-file F.json]
  [--skip-floors] [--disable-cuda-graph] [--enable-fp32-all-reduce] [--disable-custom-all-reduce]
--config implies --load-format dummy (random weights for that config.json). The first case
runs once untimed first (a warm-up, as SGLang's bench_one_batch), and so does the longest
prefill chunk of the first input length.
)";

struct Case {
  int32_t batch_size = 0;
  int32_t input_len = 0;
  int32_t output_len = 0;
};

struct CaseResult {
  Case c;
  double prefill_s = 0;
  double decode_step_s = 0;  // median over the decode steps
  double decode_bytes = 0;   // weights + KV read by the median step
  double prefill_flops = 0;
};

// Parameters of layer `layer`'s MLP that `experts` routed experts per sparse layer touch (the
// router and a shared expert always).
double mlp_params(const model::ModelConfig& c, int64_t layer, double experts) {
  const double h = c.hidden_size;
  if (!c.is_sparse_layer(layer)) return 3 * h * c.intermediate_size;
  const double shared = c.shared_expert_intermediate_size;
  return h * c.num_experts + experts * 3 * h * c.moe_intermediate_size +
         (shared > 0 ? 3 * h * shared + h : 0);
}

// Bytes of the weights a decode step of `bs` requests reads: all but the embedding table (the LM
// head included; a tied head is the embedding table, read whole each step all the same); of a
// MoE layer's experts, at most bs x top-k distinct ones.
double weight_bytes_per_step(const model::ModelConfig& c, int64_t bs, size_t dtype_bytes) {
  const double h = c.hidden_size, q = c.q_size(), kv = c.kv_size();
  const double experts = static_cast<double>(std::min(c.num_experts, bs * c.num_experts_per_tok));
  double params = h + c.vocab_size * h;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    params += h * (q + 2 * kv) + q * h + 2 * h + mlp_params(c, i, experts);
  }
  return params * static_cast<double>(dtype_bytes);
}

// FLOPs of a prefill of `bs` requests of `len` new tokens each (no prefix): GEMMs over every
// token (through its top-k experts on MoE layers), the LM head over the last token of each
// request, causal attention (QK^T and PV).
double prefill_flops(const model::ModelConfig& c, int64_t bs, int64_t len) {
  const double h = c.hidden_size, q = c.q_size(), kv = c.kv_size();
  double params = 0;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    params +=
        h * (q + 2 * kv) + q * h + mlp_params(c, i, static_cast<double>(c.num_experts_per_tok));
  }
  const double tokens = static_cast<double>(bs * len);
  const double gemm = 2.0 * tokens * params;
  const double head = 2.0 * static_cast<double>(bs) * h * c.vocab_size;
  const double pairs = static_cast<double>(bs) * len * (len + 1) / 2.0;
  const double attn = 4.0 * pairs * c.num_hidden_layers * c.num_attention_heads * c.head_dim;
  return gemm + head + attn;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class OneBatchBench {
 public:
  OneBatchBench(runner::ModelRunner& runner, int32_t max_prefill_tokens)
      : runner_(runner),
        max_prefill_tokens_(max_prefill_tokens),
        req_to_token_(static_cast<int32_t>(runner.options().max_batch_size),
                      static_cast<int32_t>(runner.context_length())),
        kv_(static_cast<int32_t>(runner.num_kv_slots())),
        builder_(runner.allocator(), runner.options().max_num_tokens,
                 runner.options().max_batch_size, req_to_token_.table()) {}

  Result<CaseResult> run(const Case& c) {
    const int32_t total = c.input_len + c.output_len;
    std::vector<int32_t> rows(c.batch_size);
    std::vector<std::vector<int32_t>> slots(c.batch_size), ids(c.batch_size);
    std::mt19937 rng(c.batch_size * 7919 + c.input_len);
    std::uniform_int_distribution<int32_t> token(
        10, static_cast<int32_t>(runner_.config().vocab_size - 1));
    for (int32_t b = 0; b < c.batch_size; ++b) {
      std::optional<int32_t> row = req_to_token_.alloc();
      std::optional<std::vector<int32_t>> row_slots = kv_.alloc(total);
      if (!row || !row_slots) return resource_exhausted("KV pool too small for the case");
      rows[b] = *row;
      slots[b] = std::move(*row_slots);
      req_to_token_.write(rows[b], 0, slots[b]);
      ids[b].resize(total);
      for (int32_t& t : ids[b]) t = token(rng);
    }
    CaseResult result{c};
    const backend::Stream stream = runner_.stream();
    // Greedy sampling on the device, as a server would run it; sampled ids feed the next step.
    sampling::SamplingBatch greedy;
    greedy.params.assign(c.batch_size, sampling::SamplingParams{.temperature = 0.f});
    greedy.steps.assign(c.batch_size, 0);
    greedy.top_logprobs_num.assign(c.batch_size, 0);

    // Prefill, in chunks of whole requests of at most max_prefill_tokens (like the scheduler).
    backend::synchronize(stream);
    auto start = std::chrono::steady_clock::now();
    for (int32_t first = 0; first < c.batch_size;) {
      std::vector<runner::BatchRequest> chunk;
      int32_t tokens = 0;
      while (first < c.batch_size &&
             (chunk.empty() || tokens + c.input_len <= max_prefill_tokens_)) {
        chunk.push_back({rows[first], 0, std::span(ids[first]).first(c.input_len),
                         std::span(slots[first]).first(c.input_len)});
        tokens += c.input_len;
        ++first;
      }
      const ForwardBatch fb =
          builder_.build(ForwardMode::kExtend, LogitsMode::kLastPerRequest, chunk, stream);
      sampling::SamplingBatch chunk_sampling = greedy;
      chunk_sampling.params.resize(chunk.size());
      chunk_sampling.steps.resize(chunk.size());
      chunk_sampling.top_logprobs_num.resize(chunk.size());
      runner_.forward_and_sample(fb, chunk_sampling);
    }
    backend::synchronize(stream);
    result.prefill_s = seconds_since(start);

    // Decode: one token per request per step. On a GPU queued as the engine's overlap loop
    // queues them: step s + 1 goes out before step s's ids reach the host, its input ids read on
    // the device from step s's samples (sampled_id_ref), and a step's time is the interval
    // between two collects (the GPU's time per step, host work hidden). On the CPU each step
    // runs to its end before the next is built.
    const bool pipelined = runner_.can_launch(greedy);
    std::vector<double> steps;
    std::vector<runner::BatchRequest> batch(c.batch_size);
    std::vector<int32_t> refs(c.batch_size);
    for (int32_t b = 0; b < c.batch_size; ++b) refs[b] = sampled_id_ref(b);
    std::optional<runner::ModelRunner::LaunchedSample> in_flight;
    start = std::chrono::steady_clock::now();
    auto step_done = [&] {
      const auto now = std::chrono::steady_clock::now();
      steps.push_back(std::chrono::duration<double>(now - start).count());
      start = now;
    };
    auto collect_in_flight = [&] {
      if (!in_flight) return;
      runner_.collect(*in_flight);
      step_done();
    };
    for (int32_t s = 0; s < c.output_len; ++s) {
      const int32_t pos = c.input_len + s;
      for (int32_t b = 0; b < c.batch_size; ++b) {
        const std::span<const int32_t> id = pipelined && s > 0
                                                ? std::span<const int32_t>(refs).subspan(b, 1)
                                                : std::span<const int32_t>(ids[b]).subspan(pos, 1);
        batch[b] = {rows[b], pos, id, std::span(slots[b]).subspan(pos, 1)};
      }
      const ForwardBatch fb =
          builder_.build(ForwardMode::kDecode, LogitsMode::kLastPerRequest, batch, stream);
      if (!pipelined) {
        const sampling::SampleOutput next = runner_.forward_and_sample(fb, greedy);
        step_done();
        if (pos + 1 < total) {
          for (int32_t b = 0; b < c.batch_size; ++b) ids[b][pos + 1] = next.next_token_ids[b];
        }
        continue;
      }
      runner::ModelRunner::LaunchedSample launched = runner_.launch_forward_and_sample(fb, greedy);
      collect_in_flight();
      in_flight = std::move(launched);
    }
    collect_in_flight();
    // A pipelined run's first interval also holds the pipeline's fill.
    if (pipelined && steps.size() > 1) steps.erase(steps.begin());
    std::vector<double> sorted = steps;
    std::sort(sorted.begin(), sorted.end());
    result.decode_step_s = sorted.empty() ? 0 : sorted[sorted.size() / 2];

    // This rank's share: 1/tp of the weights, its KV heads.
    const model::ModelConfig& config = runner_.config();
    const int tp = runner_.options().tp_size;
    const double kv_token_bytes =
        2.0 * config.num_hidden_layers *
        static_cast<double>(model::kv_heads_per_rank(config.num_key_value_heads, tp)) *
        config.head_dim * dtype_size(runner_.kv_cache_dtype());
    const double mid_context = c.input_len + c.output_len / 2.0;
    result.decode_bytes =
        weight_bytes_per_step(config, c.batch_size, dtype_size(runner_.compute_dtype())) / tp +
        c.batch_size * mid_context * kv_token_bytes;
    // Each GPU's share, as the decode floor's weights (every rank computes 1/tp of each GEMM).
    result.prefill_flops = prefill_flops(config, c.batch_size, c.input_len) / tp;

    for (int32_t b = 0; b < c.batch_size; ++b) {
      kv_.free(slots[b]);
      req_to_token_.free(rows[b]);
    }
    return result;
  }

 private:
  runner::ModelRunner& runner_;
  int32_t max_prefill_tokens_;
  cache::ReqToTokenPool req_to_token_;
  cache::TokenToKvPoolAllocator kv_;
  runner::ForwardBatchBuilder builder_;
};

int fail(const Status& s) { return bench_fail("one-batch", s); }

}  // namespace

int run_bench_one_batch(int argc, char** argv) {
  const std::set<std::string> value_flags = {"--model-path",
                                             "--config",
                                             "--load-format",
                                             "--dtype",
                                             "--kv-cache-dtype",
                                             "--device",
                                             "--batch-size",
                                             "--input-len",
                                             "--output-len",
                                             "--output-file",
                                             "--max-prefill-tokens",
                                             "--attention-backend",
                                             "--linear-backend",
                                             "--log-level",
                                             "--tp-size",
                                             "--ep-size",
                                             "--base-gpu-id"};
  const std::set<std::string> switch_flags = {"--skip-floors", "--disable-cuda-graph",
                                              "--enable-fp32-all-reduce",
                                              "--disable-custom-all-reduce", "--help"};
  auto args = CliArgs::parse(argc, argv, value_flags, switch_flags);
  if (!args.ok()) return fail(args.status());
  if (args->has("--help")) {
    std::cout << kUsage;
    return 0;
  }
  if (Status s = apply_log_level(*args, "warning"); !s.ok()) return fail(s);
  runner::ModelRunnerOptions options;
  options.load_format = args->get("--load-format").value_or("auto");
  auto model_path = bench_model_path(*args, options.load_format);
  if (!model_path.ok()) {
    std::cerr << kUsage;
    return fail(model_path.status());
  }
  auto batch_sizes = args->get_int_list("--batch-size");
  auto input_lens = args->get_int_list("--input-len");
  auto output_len = args->get_int("--output-len", 256);
  auto max_prefill = args->get_int("--max-prefill-tokens", 8192);
  for (const Status& s :
       {batch_sizes.status(), input_lens.status(), output_len.status(), max_prefill.status()}) {
    if (!s.ok()) return fail(s);
  }
  if (batch_sizes->empty()) *batch_sizes = {1, 8, 64, 256};
  if (input_lens->empty()) *input_lens = {128, 1024};
  const int32_t max_bs = *std::max_element(batch_sizes->begin(), batch_sizes->end());
  const int32_t max_in = *std::max_element(input_lens->begin(), input_lens->end());
  if (*std::min_element(batch_sizes->begin(), batch_sizes->end()) < 1 ||
      *std::min_element(input_lens->begin(), input_lens->end()) < 1 || *output_len < 1 ||
      *max_prefill < max_in) {
    return fail(invalid_argument(
        "batch sizes, input and output lengths must be >= 1 and --max-prefill-tokens >= the "
        "longest input"));
  }

  auto base_gpu = args->get_int("--base-gpu-id", 0);
  if (!base_gpu.ok()) return fail(base_gpu.status());
  std::vector<std::string> device_notes;
  auto device = parse_device(
      resolve_device_name(args->get("--device").value_or("auto"), *base_gpu, device_notes));
  if (!device) return fail(invalid_argument("--device expects auto, cpu, cuda or cuda:N"));
  for (const std::string& note : device_notes) std::printf("note: %s\n", note.c_str());
  options.device = *device;
  options.dtype = args->get("--dtype").value_or("auto");
  options.kv_cache_dtype = args->get("--kv-cache-dtype").value_or("auto");
  options.attention_backend = args->get("--attention-backend").value_or("auto");
  options.linear_backend = args->get("--linear-backend").value_or("auto");
  options.max_batch_size = max_bs;
  options.max_logit_rows = max_bs;  // one row per request: nothing here scores prompts
  options.disable_cuda_graph = args->has("--disable-cuda-graph");
  options.fp32_all_reduce = args->has("--enable-fp32-all-reduce");
  options.disable_custom_all_reduce = args->has("--disable-custom-all-reduce");
  options.max_num_tokens = std::max<int64_t>(*max_prefill, max_bs);
  options.context_length = max_in + static_cast<int32_t>(*output_len);
  options.allow_longer_context = true;  // a benchmark of shapes, past the config's length too
  options.num_kv_slots = static_cast<int64_t>(max_bs) * options.context_length + 1;
  auto tp_size = args->get_int("--tp-size", 1);
  if (!tp_size.ok()) return fail(tp_size.status());
  if (*tp_size < 1 || *tp_size > 64 || *base_gpu < 0) {
    return fail(invalid_argument("--tp-size must be in [1, 64] and --base-gpu-id >= 0"));
  }
  options.tp_size = static_cast<int>(*tp_size);
  for (const std::string& note : all_reduce_notes(options)) std::printf("note: %s\n", note.c_str());
  auto ep_size = args->get_int("--ep-size", 1);
  if (!ep_size.ok()) return fail(ep_size.status());
  if (*ep_size < 1 || *ep_size > *tp_size) {
    return fail(invalid_argument("--ep-size must be in [1, --tp-size]"));
  }
  options.ep_size = static_cast<int>(*ep_size);  // the model checks that it divides tp
  if (*base_gpu > 0) {
    if (!options.device.is_cuda())
      return fail(invalid_argument("--base-gpu-id needs --device cuda"));
    options.device = Device::cuda(static_cast<int>(*base_gpu));
  }

  const auto load_start = std::chrono::steady_clock::now();
  // The other ranks' group, and rank 0 (the only rank at --tp-size 1), which must not outlive
  // the group's communicators: declared after it, it is destroyed first. (The other way round
  // the process hung at exit at --tp-size 2 on two H200s, after printing every case.)
  std::unique_ptr<runner::TpWorkerGroup> group;
  std::unique_ptr<runner::ModelRunner> rank0;
  if (options.tp_size > 1) {
    auto created = runner::TpWorkerGroup::create(*model_path, options, {}, &rank0);
    if (!created.ok()) return fail(created.status());
    group = std::move(created).value();
  } else {
    auto created = runner::ModelRunner::create(*model_path, options);
    if (!created.ok()) return fail(created.status());
    rank0 = std::move(created).value();
  }
  const std::vector<runner::ModelRunner*> ranks =
      group != nullptr ? group->ranks(*rank0) : std::vector<runner::ModelRunner*>{rank0.get()};
  for (runner::ModelRunner* rank : ranks) backend::synchronize(rank->stream());
  const auto runner = &rank0;  // rank 0 reports
  const double load_s = seconds_since(load_start);
  std::printf(
      "loaded in %.2f s (%s%s, %s)\n", load_s, options.device.to_string().c_str(),
      options.tp_size > 1
          ? (" + " + std::to_string(options.tp_size - 1) + " more tensor-parallel ranks").c_str()
          : "",
      std::string(dtype_name((*runner)->compute_dtype())).c_str());

  DeviceFloors floors;
  if (!options.device.is_cpu() && !args->has("--skip-floors")) {
    auto measured = measure_device_floors((*runner)->allocator(), (*runner)->stream());
    if (!measured.ok()) return fail(measured.status());
    floors = *measured;
    std::printf("floors: copy %.0f GB/s (read + write), bf16 GEMM %.0f TFLOP/s\n",
                floors.copy_bytes_per_s / 1e9, floors.gemm_flops_per_s / 1e12);
  }

  std::vector<std::unique_ptr<OneBatchBench>> benches;
  for (runner::ModelRunner* rank : ranks) {
    benches.push_back(std::make_unique<OneBatchBench>(*rank, static_cast<int32_t>(*max_prefill)));
  }
  // Every rank runs the case at once (their collectives meet); rank 0's result is reported.
  auto run_case = [&](const Case& c) -> Result<CaseResult> {
    if (benches.size() == 1) return benches[0]->run(c);
    std::vector<std::optional<Result<CaseResult>>> results(benches.size());
    std::vector<std::thread> threads;
    for (size_t r = 0; r < benches.size(); ++r) {
      threads.emplace_back([&, r] {
        backend::set_current_device(ranks[r]->options().device);
        results[r] = benches[r]->run(c);
      });
    }
    for (std::thread& t : threads) t.join();
    for (auto& result : results) {
      if (!result->ok()) return result->status();
    }
    return std::move(*results[0]);
  };
  nlohmann::json report = {{"load_s", load_s},
                           {"device", options.device.to_string()},
                           {"tp_size", options.tp_size},
                           {"ep_size", options.ep_size},
                           {"copy_bytes_per_s", floors.copy_bytes_per_s},
                           {"gemm_flops_per_s", floors.gemm_flops_per_s},
                           {"cases", nlohmann::json::array()}};
  // Warm-up runs, untimed: the first case (as SGLang's bench_one_batch), then the longest
  // prefill chunk of the first input length (the kernels of long prefills differ from a batch
  // of one's). Otherwise the first of each pays one-time costs (lazily loaded kernels, library
  // heuristics) in its time (docs/perf-log/2026-11-30-moe-prefill-align.md).
  const auto out_len = static_cast<int32_t>(*output_len);
  const int32_t in0 = (*input_lens)[0];
  const int32_t longest_chunk = std::min<int32_t>(
      static_cast<int32_t>(max_bs), std::max<int32_t>(1, static_cast<int32_t>(*max_prefill) / in0));
  std::vector<Case> warm_ups = {{(*batch_sizes)[0], in0, std::min<int32_t>(32, out_len)}};
  if (longest_chunk != (*batch_sizes)[0]) warm_ups.push_back({longest_chunk, in0, 1});
  for (const Case& warm : warm_ups) {
    if (auto r = run_case(warm); !r.ok()) return fail(r.status());
  }
  std::printf("\n%6s %6s %6s | %11s %12s %8s | %10s %12s %9s %8s\n", "bs", "in", "out",
              "prefill ms", "prefill t/s", "of peak", "step ms", "decode t/s", "GB/step", "of bw");
  for (int32_t in : *input_lens) {
    for (int32_t bs : *batch_sizes) {
      auto r = run_case({bs, in, static_cast<int32_t>(*output_len)});
      if (!r.ok()) return fail(r.status());
      const double prefill_tps = bs * in / r->prefill_s;
      const double decode_tps = bs / r->decode_step_s;
      const double of_peak = floors.gemm_flops_per_s > 0
                                 ? r->prefill_flops / floors.gemm_flops_per_s / r->prefill_s
                                 : 0;
      const double of_bw = floors.copy_bytes_per_s > 0
                               ? r->decode_bytes / floors.copy_bytes_per_s / r->decode_step_s
                               : 0;
      std::printf("%6d %6d %6d | %11.2f %12.0f %7.1f%% | %10.3f %12.1f %9.2f %7.1f%%\n", bs, in,
                  r->c.output_len, r->prefill_s * 1e3, prefill_tps, 100 * of_peak,
                  r->decode_step_s * 1e3, decode_tps, r->decode_bytes / 1e9, 100 * of_bw);
      std::fflush(stdout);
      report["cases"].push_back({{"batch_size", bs},
                                 {"input_len", in},
                                 {"output_len", r->c.output_len},
                                 {"prefill_s", r->prefill_s},
                                 {"prefill_tokens_per_s", prefill_tps},
                                 {"prefill_flops", r->prefill_flops},
                                 {"prefill_fraction_of_gemm_peak", of_peak},
                                 {"decode_step_s", r->decode_step_s},
                                 {"decode_tokens_per_s", decode_tps},
                                 {"decode_bytes_per_step", r->decode_bytes},
                                 {"decode_fraction_of_bandwidth", of_bw}});
    }
  }
  if (const auto out = args->get("--output-file")) {
    std::ofstream f(*out);
    f << report.dump(1) << "\n";
    if (!f) return fail(internal_error("cannot write " + *out));
  }
  return 0;
}

}  // namespace sgl::app
