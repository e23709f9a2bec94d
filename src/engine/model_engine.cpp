// ModelEngine assembly.
#include "engine/model_engine.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "core/logging.h"
#include "model/gguf.h"
#include "model/model_config.h"
#include "runner/model_batch_runner.h"
#include "runner/node_link.h"
#include "runner/tp_batch_runner.h"

namespace sgl::engine {
namespace {

// How long node 0 waits for the other nodes, and they for it (a model may load for minutes).
constexpr std::chrono::milliseconds kNodeJoinTimeout = std::chrono::minutes(10);

// The layout every node must share, with a fingerprint of the sized options that shape a
// forward pass (FNV-1a over their text): nodes started with other flags would capture other
// graphs and run other batches, and their collectives would not meet.
runner::NodeLayout node_layout(const runner::ModelRunnerOptions& ro,
                               const distributed::MultiNode& nodes) {
  std::string shape = ro.device.is_cpu() ? "cpu" : "cuda";
  for (const std::string& s : {ro.attention_backend, ro.linear_backend, ro.load_format, ro.dtype,
                               ro.kv_cache_dtype, ro.json_model_override_args}) {
    shape.append("|").append(s);
  }
  for (const int64_t v :
       {ro.max_num_tokens, ro.max_batch_size, ro.max_logit_rows, ro.context_length, ro.num_kv_slots,
        static_cast<int64_t>(ro.seed), static_cast<int64_t>(ro.disable_cuda_graph),
        ro.cuda_graph_max_bs, static_cast<int64_t>(ro.enable_return_routed_experts),
        static_cast<int64_t>(ro.enable_nan_detection), static_cast<int64_t>(ro.ep_dispatch),
        static_cast<int64_t>(ro.fp32_all_reduce)}) {
    shape.append("|").append(std::to_string(v));
  }
  for (const int32_t bs : ro.cuda_graph_bs) shape.append(",").append(std::to_string(bs));
  uint64_t hash = 14695981039346656037ull;
  for (const char c : shape) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return {ro.tp_size, ro.ep_size, nodes.nnodes, hash};
}

// A lost node takes its ranks' shards with it and the others' collectives would wait for it
// forever (NCCL has no timeout): this process ends at once, saying why.
[[noreturn]] void end_for_lost_node(const std::string& what) {
  SGL_LOG_ERROR << what << ": its tensor-parallel ranks are lost; this node stops";
  std::fflush(stderr);  // the log's sink; _Exit flushes nothing
  std::_Exit(1);
}

// What serving across nodes supports: tensor-parallel ranks split evenly over the nodes.
Status check_nodes(const runner::ModelRunnerOptions& ro, const EngineOptions& options,
                   const distributed::MultiNode& nodes) {
  SGL_RETURN_IF_ERROR(distributed::check_multi_node(nodes));
  if (nodes.nnodes == 1) return Status::ok_status();
  SGL_RETURN_IF_ERROR(distributed::check_ranks_per_node(ro.tp_size, nodes));
  if (ro.is_embedding) {
    return invalid_argument("--nnodes " + std::to_string(nodes.nnodes) +
                            " with --is-embedding is not implemented");
  }
  if (options.scheduler.speculative.drafts_in_runner()) {
    return invalid_argument("--nnodes " + std::to_string(nodes.nnodes) +
                            " with EAGLE speculative decoding is not implemented");
  }
  if (ro.enable_memory_saver) {
    return invalid_argument("--nnodes " + std::to_string(nodes.nnodes) +
                            " with --enable-memory-saver is not implemented (the other nodes' "
                            "memory is out of reach of the release)");
  }
  if (nodes.dist_init_addr->port == 65535) {
    return invalid_argument("--dist-init-addr " + nodes.dist_init_addr->to_string() +
                            ": the ranks' group takes PORT + 1, so PORT must be below 65535");
  }
  return Status::ok_status();
}

// A classification or reward model is served as an embedding model whether or not
// --is-embedding says so (SGLang's is_generation_model). Only config.json is read (a GGUF file
// holds no task head); one that cannot be read is the runner's to report.
bool scores_with_task_head(const std::filesystem::path& model_path,
                           const runner::ModelRunnerOptions& ro) {
  if (model::is_gguf_file(model_path)) return false;
  const Result<model::ModelConfig> config =
      model::load_model_config_file(model_path / "config.json", ro.json_model_override_args);
  return config.ok() && config->has_task_head();
}

// The runner sizes an engine of `options` needs (batch, token and logits rows, CUDA graphs for
// verify passes, EAGLE's captured layers), and the engine options they settle; an error for a
// combination not supported.
Status size_runner_for_engine(const std::filesystem::path& model_path,
                              runner::ModelRunnerOptions& ro, EngineOptions& options) {
  // One forward takes a full prefill budget plus every running decode (MIXED); a chunk larger
  // than the budget runs whole when it is a round's first request (as SGLang's PrefillAdder
  // lets it), so the larger of the two.
  const int64_t prefill =
      std::max(options.scheduler.chunked_prefill_size, options.scheduler.max_prefill_tokens);
  ro.max_batch_size = 2 * options.scheduler.max_running_requests + 2;
  ro.max_num_tokens = prefill + options.scheduler.max_running_requests;
  // Logits rows: one per request, or for a batch that scores a prompt its scored prefill (the
  // scheduler's budget) plus the running decodes a MIXED batch carries; not one per token of
  // the largest batch (8448 x 128256 f32 = 4.3 GB for Llama-3 at the defaults, on the GPU and
  // again pinned).
  options.scheduler.max_scoring_tokens =
      std::clamp<int64_t>(options.scheduler.max_scoring_tokens, 1, ro.max_num_tokens);
  ro.max_logit_rows =
      std::max<int64_t>(ro.max_batch_size, options.scheduler.max_running_requests +
                                               options.scheduler.max_scoring_tokens);
  const speculative::SpeculativeOptions& spec = options.scheduler.speculative;
  // A verify batch's tokens are each a logits row. (A draft needs its request's last token on
  // the host: the engine drains the overlap loop before a step that drafts and after a verify;
  // plain steps, when the draft length policy chose them, overlap.)
  options.scheduler.max_verify_tokens = std::min(ro.max_num_tokens, ro.max_logit_rows);
  if (spec.enabled()) {
    // The target's verify passes replay CUDA graphs (SGLang's TARGET_VERIFY graphs) where every
    // request verifies as many drafts: the full count, and under the adaptive policy each count
    // it may choose (an n-gram lookup that finds a match drafts as many as asked: the match's
    // continuation repeats). Passes whose requests' counts differ (cut at the end of a request,
    // by the KV cache or by max_verify_tokens) and mixed batches (some requests' lookups found
    // nothing) run eagerly.
    ro.cuda_graph_verify_tokens = {spec.num_draft_tokens};
    for (int32_t t = 2; spec.adaptive_drafts && t < spec.num_draft_tokens; ++t) {
      ro.cuda_graph_verify_tokens.push_back(t);
    }
    ro.cuda_graph_verify_tree = spec.drafts_in_runner() && spec.eagle_topk > 1;
  }
  if (spec.drafts_in_runner()) {
    // NOTE: every EAGLE pass captures hidden states, which the decode graphs do not, yet the
    // graphs stay: without them batch 8 ran slower (docs/perf-log/2026-11-29-eagle-chain.md).
    if (ro.is_embedding) {
      return invalid_argument(
          "--speculative-algorithm is for generation models, not "
          "--is-embedding");
    }
    if (ro.enable_memory_saver) {
      return invalid_argument(
          "--enable-memory-saver with EAGLE speculative decoding is not implemented (the draft "
          "head's weights and KV cache would stay)");
    }
    if (spec.algorithm == speculative::SpeculativeAlgorithm::kEagle3) {
      SGL_ASSIGN_OR_RETURN(ro.aux_hidden_state_layers,
                           runner::eagle3_capture_layers(spec.draft_model_path, model_path,
                                                         ro.json_model_override_args));
    }
    ro.draft_head = runner::DraftHeadOptions{
        .dir = spec.draft_model_path, .topk = spec.eagle_topk, .num_steps = spec.num_steps};
  }
  if (spec.bench_accept_length > 0 && ro.tp_size > 1) {
    return invalid_argument(
        "--speculative-bench-accept-length with --tp-size > 1 is not implemented");
  }
  return Status::ok_status();
}

}  // namespace

Result<ModelEngine> launch_model_engine(const std::filesystem::path& model_path,
                                        const runner::ModelRunnerOptions& runner_options,
                                        EngineOptions options,
                                        const std::vector<int32_t>& extra_eos_ids,
                                        const distributed::MultiNode& nodes) {
  runner::ModelRunnerOptions ro = runner_options;
  ro.is_embedding = ro.is_embedding || scores_with_task_head(model_path, ro);
  SGL_RETURN_IF_ERROR(size_runner_for_engine(model_path, ro, options));
  SGL_RETURN_IF_ERROR(check_nodes(ro, options, nodes));
  if (nodes.node_rank != 0) {
    return invalid_argument("--node-rank " + std::to_string(nodes.node_rank) +
                            " runs its ranks for node 0 (run_follower_node), not an engine");
  }
  const speculative::SpeculativeOptions& spec = options.scheduler.speculative;
  ModelEngine me;
  std::unique_ptr<runner::LeaderLink> followers;
  if (nodes.nnodes > 1) {
    // The other nodes join first: their ranks join the group while this node's do.
    SGL_ASSIGN_OR_RETURN(
        followers, runner::LeaderLink::accept_followers(*nodes.dist_init_addr,
                                                        node_layout(ro, nodes), kNodeJoinTimeout));
    followers->watch(
        [](int node) { end_for_lost_node("node " + std::to_string(node) + " is gone"); });
  }
  if (ro.tp_size > 1) {
    SGL_ASSIGN_OR_RETURN(
        me.tp_workers,
        runner::TpWorkerGroup::create(model_path, ro, nodes, &me.model_runner, kNodeJoinTimeout));
  } else {
    SGL_ASSIGN_OR_RETURN(me.model_runner, runner::ModelRunner::create(model_path, ro));
  }
  if (spec.drafts_in_runner()) {
    const model::DraftKind kind = spec.algorithm == speculative::SpeculativeAlgorithm::kEagle3
                                      ? model::DraftKind::kEagle3
                                      : model::DraftKind::kEagle;
    // Every rank drafts alike (the same hidden states and ids), so each has the whole head.
    const std::vector<runner::ModelRunner*> ranks =
        me.tp_workers != nullptr ? me.tp_workers->ranks(*me.model_runner)
                                 : std::vector<runner::ModelRunner*>{me.model_runner.get()};
    for (runner::ModelRunner* rank : ranks) {
      SGL_ASSIGN_OR_RETURN(std::unique_ptr<runner::EagleDraftRunner> draft,
                           runner::EagleDraftRunner::create(spec.draft_model_path, kind, *rank,
                                                            spec.eagle_topk, spec.num_steps));
      me.eagle_drafts.push_back(std::move(draft));
    }
  }
  const model::ModelConfig& config = me.model_runner->config();
  if (ro.enable_return_routed_experts && config.num_experts == 0) {
    return invalid_argument("--enable-return-routed-experts needs a Mixture-of-Experts model (" +
                            config.architecture + " has no routed experts)");
  }
  options.num_kv_slots = static_cast<int32_t>(me.model_runner->num_kv_slots());
  options.context_length = static_cast<int32_t>(me.model_runner->context_length());
  options.vocab_size = config.vocab_size;
  options.max_num_tokens = ro.max_num_tokens;
  options.eos_token_ids = config.eos_token_ids;
  options.return_routed_experts = ro.enable_return_routed_experts;
  options.lora_cache_keys.clear();
  for (size_t i = 0; i < ro.lora_paths.size(); ++i) {
    options.lora_cache_keys.push_back(lora_cache_key(i + 1, ro.lora_paths[i].name));
  }
  options.scheduler.pooler = me.model_runner->pooler();
  // A sleeping thread wakes tens of microseconds late: on a GPU, steps of half a millisecond
  // (a small model, a speculative verify) would lose a tenth of their time to the two handoffs.
  if (!ro.device.is_cpu()) {
    options.executor_spin = std::chrono::microseconds(1000);
    options.device_profiler_capture = [device = ro.device](bool on) {
      return backend::set_device_profiler_capture(device, on);
    };
  }
  for (int32_t id : extra_eos_ids) {
    if (std::find(options.eos_token_ids.begin(), options.eos_token_ids.end(), id) ==
        options.eos_token_ids.end()) {
      options.eos_token_ids.push_back(id);
    }
  }
  // The scheduler's tables are sized by the context length (e.g. requests x context ids).
  try {
    me.engine = std::make_unique<Engine>(options);
  } catch (const std::bad_alloc& e) {
    return resource_exhausted("out of memory starting the engine for " + model_path.string() +
                              " (context length " + std::to_string(options.context_length) + ": " +
                              e.what() + "); try a smaller --context-length");
  }
  if (followers != nullptr) {
    const cache::ReqToTokenPool& pool = me.engine->req_to_token_pool();
    SGL_RETURN_IF_ERROR(
        followers->send_start({static_cast<int32_t>(me.model_runner->num_kv_slots()), pool.size(),
                               pool.max_context_len()}));
  }
  std::vector<runner::EagleDraftRunner*> drafts;
  for (const auto& draft : me.eagle_drafts) drafts.push_back(draft.get());
  if (me.tp_workers != nullptr) {
    me.engine->start(std::make_unique<runner::TpBatchRunner>(*me.model_runner, *me.tp_workers,
                                                             me.engine->req_to_token_pool(),
                                                             std::move(followers), drafts));
  } else {
    me.engine->start(std::make_unique<runner::ModelBatchRunner>(
        *me.model_runner, me.engine->req_to_token_pool(), drafts.empty() ? nullptr : drafts[0],
        spec.bench_accept_length));
  }
  return me;
}

Status run_follower_node(const std::filesystem::path& model_path,
                         const runner::ModelRunnerOptions& runner_options, EngineOptions options,
                         const distributed::MultiNode& nodes) {
  runner::ModelRunnerOptions ro = runner_options;
  ro.is_embedding = ro.is_embedding || scores_with_task_head(model_path, ro);
  SGL_RETURN_IF_ERROR(size_runner_for_engine(model_path, ro, options));
  SGL_RETURN_IF_ERROR(check_nodes(ro, options, nodes));
  if (nodes.node_rank == 0) return invalid_argument("node 0 runs the engine, not a follower");
  SGL_ASSIGN_OR_RETURN(std::unique_ptr<runner::FollowerLink> link,
                       runner::FollowerLink::join(*nodes.dist_init_addr, nodes.node_rank,
                                                  node_layout(ro, nodes), kNodeJoinTimeout));
  SGL_LOG_INFO << "node " << nodes.node_rank << " joined node 0 at "
               << nodes.dist_init_addr->to_string();
  link->watch([] { end_for_lost_node("node 0 is gone"); });
  SGL_ASSIGN_OR_RETURN(std::unique_ptr<runner::TpWorkerGroup> workers,
                       runner::TpWorkerGroup::join(ro, nodes, kNodeJoinTimeout));
  std::unique_ptr<runner::ModelRunner> first;
  std::optional<runner::NodeStart> start;
  if (ro.device.is_cpu()) {
    // CPU ranks take node 0's KV slot count (GPU ranks agree on theirs while they load).
    SGL_ASSIGN_OR_RETURN(start, link->receive_start());
    ro.num_kv_slots = start->num_kv_slots;
  }
  SGL_RETURN_IF_ERROR(workers->load(model_path, ro, &first));
  if (!start) {
    SGL_ASSIGN_OR_RETURN(start, link->receive_start());
  }
  if (start->num_kv_slots != first->num_kv_slots()) {
    return internal_error("node 0 has " + std::to_string(start->num_kv_slots) +
                          " KV slots a rank, this node " + std::to_string(first->num_kv_slots()));
  }
  cache::ReqToTokenPool req_to_token(start->req_to_token_rows, start->context_len);
  runner::TpBatchRunner ranks(*first, *workers, req_to_token);
  SGL_LOG_INFO << "node " << nodes.node_rank << " serving node 0's batches";
  int64_t batches = 0;
  for (;;) {
    SGL_ASSIGN_OR_RETURN(std::optional<runner::ExecBatch> batch, link->receive_batch());
    if (!batch) break;
    ranks.run(*batch);
    ++batches;
  }
  SGL_LOG_INFO << "node " << nodes.node_rank << ": node 0 stopped after " << batches << " batches";
  return Status::ok_status();
}

namespace {

// Every tensor-parallel rank's runner of `replica`, all in this process (`what` names the
// operation that needs them all in the refusal otherwise).
Result<std::vector<runner::ModelRunner*>> local_ranks(ModelEngine& replica,
                                                      const std::string& what) {
  if (!replica.tp_workers) return std::vector<runner::ModelRunner*>{replica.model_runner.get()};
  std::vector<runner::ModelRunner*> ranks = replica.tp_workers->ranks(*replica.model_runner);
  if (static_cast<int>(ranks.size()) < replica.model_runner->options().tp_size) {
    return unimplemented(what + " of a model served across nodes (--nnodes > 1)");
  }
  return ranks;
}

// Writes one rank's `share` (f32, of slice.shape_of(shape)) into `whole` (f32, of `shape`).
void place_share(const runner::ModelRunner::HostWeight& share, std::vector<float>& whole) {
  const std::vector<int64_t>& shape = share.shape;
  const model::TensorSlice& slice = share.slice;
  if (slice.whole()) {
    whole = share.values;
    return;
  }
  // Rows [outer, dim's extent, inner]: the slice is a range of the middle one.
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < slice.dim; ++d) outer *= shape[d];
  for (size_t d = static_cast<size_t>(slice.dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t extent = shape[static_cast<size_t>(slice.dim)];
  for (int64_t o = 0; o < outer; ++o) {
    std::copy_n(share.values.begin() + o * slice.size * inner, slice.size * inner,
                whole.begin() + (o * extent + slice.start) * inner);
  }
}

}  // namespace

Result<WeightValues> get_weights_by_name(ModelEngine& replica, const std::string& name) {
  SGL_ASSIGN_OR_RETURN(std::vector<runner::ModelRunner*> ranks,
                       local_ranks(replica, "reading the weights"));
  std::optional<WeightValues> out;
  Status missing = Status::ok_status();
  for (runner::ModelRunner* rank : ranks) {
    Result<runner::ModelRunner::HostWeight> share = rank->read_weight(name);
    if (!share.ok()) {
      if (share.status().code() != StatusCode::kNotFound) return share.status();
      missing = share.status();  // another expert group's expert: held by another rank
      continue;
    }
    if (!out) {
      int64_t numel = 1;
      for (int64_t d : share->shape) numel *= d;
      out = WeightValues{share->shape, std::vector<float>(static_cast<size_t>(numel))};
    }
    place_share(*share, out->values);
  }
  if (!out) return missing;
  return std::move(*out);
}

namespace {

// Every local rank of every replica, in order (`what` names the operation in the refusal when a
// replica's ranks span nodes).
Result<std::vector<runner::ModelRunner*>> all_local_ranks(std::span<ModelEngine> replicas,
                                                          const std::string& what) {
  std::vector<runner::ModelRunner*> ranks;
  for (ModelEngine& replica : replicas) {
    SGL_ASSIGN_OR_RETURN(std::vector<runner::ModelRunner*> local, local_ranks(replica, what));
    ranks.insert(ranks.end(), local.begin(), local.end());
  }
  return ranks;
}

}  // namespace

Result<size_t> release_memory_occupation(std::span<ModelEngine> replicas,
                                         runner::MemoryKinds kinds) {
  SGL_ASSIGN_OR_RETURN(std::vector<runner::ModelRunner*> ranks,
                       all_local_ranks(replicas, "releasing memory"));
  size_t bytes = 0;
  for (runner::ModelRunner* rank : ranks) {
    SGL_ASSIGN_OR_RETURN(const size_t released, rank->release_memory(kinds));
    bytes += released;
  }
  return bytes;
}

Status resume_memory_occupation(std::span<ModelEngine> replicas, runner::MemoryKinds kinds) {
  SGL_ASSIGN_OR_RETURN(std::vector<runner::ModelRunner*> ranks,
                       all_local_ranks(replicas, "resuming memory"));
  for (runner::ModelRunner* rank : ranks) SGL_RETURN_IF_ERROR(rank->resume_memory(kinds));
  return Status::ok_status();
}

runner::MemoryKinds released_memory(std::span<ModelEngine> replicas) {
  runner::MemoryKinds any;
  Result<std::vector<runner::ModelRunner*>> ranks = all_local_ranks(replicas, "");
  if (!ranks.ok()) return any;
  for (runner::ModelRunner* rank : *ranks) {
    const runner::MemoryKinds released = rank->released_memory();
    any.weights = any.weights || released.weights;
    any.kv_cache = any.kv_cache || released.kv_cache;
  }
  return any;
}

Status update_weights_from_disk(std::span<ModelEngine> replicas,
                                const std::filesystem::path& path) {
  for (ModelEngine& replica : replicas) {
    if (!replica.eagle_drafts.empty()) {
      return unimplemented(
          "updating the weights with --speculative-algorithm: the draft head's own weights "
          "would stay those trained against the served model");
    }
  }
  SGL_ASSIGN_OR_RETURN(const std::vector<runner::ModelRunner*> ranks,
                       all_local_ranks(replicas, "updating the weights"));
  const std::filesystem::path previous = ranks.front()->weights_path();  // every rank's
  for (size_t i = 0; i < ranks.size(); ++i) {
    const Status updated = ranks[i]->update_weights_from_disk(path);
    if (updated.ok()) continue;
    // The ranks already updated load their checkpoint back: all serve one model.
    for (size_t j = 0; j < i; ++j) {
      if (const Status restored = ranks[j]->update_weights_from_disk(previous); !restored.ok()) {
        return internal_error("updating the weights failed (" + updated.message() +
                              ") and restoring an updated rank failed too (" + restored.message() +
                              "): the served weights are mixed; restart the server");
      }
    }
    return updated;
  }
  return Status::ok_status();
}

std::string lora_cache_key(uint64_t load, std::string_view name) {
  return std::to_string(load) + ":" + std::string(name);
}

Status load_lora_adapter(std::span<ModelEngine> replicas, int32_t id,
                         const model::LoraAdapterPath& adapter, const std::string& key) {
  SGL_ASSIGN_OR_RETURN(const std::vector<runner::ModelRunner*> ranks,
                       all_local_ranks(replicas, "loading a LoRA adapter"));
  for (size_t i = 0; i < ranks.size(); ++i) {
    const Status loaded = ranks[i]->load_lora_adapter(id, adapter);
    if (loaded.ok()) continue;
    for (size_t j = 0; j < i; ++j) ranks[j]->unload_lora_adapter(id);  // all serve one set
    return loaded;
  }
  for (ModelEngine& replica : replicas) replica.engine->set_lora_adapter(id, key);
  return Status::ok_status();
}

void unload_lora_adapter(std::span<ModelEngine> replicas, int32_t id) {
  for (ModelEngine& replica : replicas) replica.engine->set_lora_adapter(id, "");
  Result<std::vector<runner::ModelRunner*>> ranks =
      all_local_ranks(replicas, "unloading a LoRA adapter");
  SGL_CHECK(ranks.ok()) << ranks.status().to_string();  // load_lora_adapter reached them
  for (runner::ModelRunner* rank : *ranks) rank->unload_lora_adapter(id);
}

}  // namespace sgl::engine
