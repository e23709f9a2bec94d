// ModelEngine: a ModelRunner and the Engine serving it, built and torn down in the right order.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "distributed/bootstrap.h"
#include "engine/engine.h"
#include "runner/eagle_draft_runner.h"
#include "runner/model_runner.h"
#include "runner/tp_worker_group.h"

namespace sgl::engine {

struct ModelEngine {
  // runner_options.tp_size > 1: the other ranks and the group's communicators (outlive the rest).
  std::unique_ptr<runner::TpWorkerGroup> tp_workers;
  std::unique_ptr<runner::ModelRunner> model_runner;  // rank 0's; outlives the engine
  // --speculative-algorithm EAGLE / EAGLE3: the draft head over model_runner, then (tp_size > 1)
  // one over each other rank of this node, in tp_workers' order.
  std::vector<std::unique_ptr<runner::EagleDraftRunner>> eagle_drafts;
  std::unique_ptr<Engine> engine;
};

// Loads the model and starts the engine loop over it. `engine_options`' KV, context, vocab and
// token limits are filled from the runner, and with runner_options.is_embedding its pooling;
// `extra_eos_ids` (e.g. the tokenizer's) join the model's EOS ids. With runner_options.tp_size > 1
// every rank is loaded and the engine's batches run on all of them (runner::TpBatchRunner).
// With EAGLE speculative decoding (engine_options.scheduler.speculative) the draft head loads
// beside the model and the engine's batch runner drafts with it.
// Across nodes (`nodes`, node 0 only): waits for the other nodes at --dist-init-addr, loads
// this node's ranks and sends every batch to the others (runner/node_link.h).
Result<ModelEngine> launch_model_engine(const std::filesystem::path& model_path,
                                        const runner::ModelRunnerOptions& runner_options,
                                        EngineOptions engine_options,
                                        const std::vector<int32_t>& extra_eos_ids = {},
                                        const distributed::MultiNode& nodes = {});

// SGLang's update_weights_from_disk: each tensor-parallel rank of every replica reads its share
// of `path` over its weights (runner::ModelRunner::update_weights_from_disk). The engines must
// be paused (Engine::pause_generation: no batch in flight). On an error no rank changed (those
// already updated load their previous checkpoint back; kInternal if one cannot). Refused beside
// an EAGLE draft head (its weights, trained against the served ones, would stay) and across
// nodes (the other nodes' ranks are out of reach here).
Status update_weights_from_disk(std::span<ModelEngine> replicas, const std::filesystem::path& path);

// The key adapter `name`'s `load`-th load (numbered from 1, the start's adapters first) caches
// its prefixes under (Engine::set_lora_adapter): a reloaded adapter's are not the old ones'.
std::string lora_cache_key(uint64_t load, std::string_view name);
// SGLang's /load_lora_adapter: every replica's rank loads `adapter` as id `id` (a free one),
// then the engines serve it under `key`. The engines must be paused; on an error none has it.
Status load_lora_adapter(std::span<ModelEngine> replicas, int32_t id,
                         const model::LoraAdapterPath& adapter, const std::string& key);
// /unload_lora_adapter: the engines refuse id `id`, every rank frees it. The engines must be
// paused, and no request may still run with the adapter (the server's LoraRegistry waits).
void unload_lora_adapter(std::span<ModelEngine> replicas, int32_t id);

// SGLang's release_memory_occupation: every tensor-parallel rank of every replica gives the
// memory of `kinds` back (runner::ModelRunner::release_memory; needs --enable-memory-saver).
// The engines must be paused and, with kv_cache, their caches flushed; no batch may run until
// resume_memory_occupation takes it all back. Returns the bytes given back. Not across nodes.
Result<size_t> release_memory_occupation(std::span<ModelEngine> replicas,
                                         runner::MemoryKinds kinds);
// SGLang's resume_memory_occupation: every rank takes the memory of `kinds` back. On an error
// (a device without the memory free) the ranks already resumed keep theirs: the kinds stay
// released where any rank has them released (released_memory).
Status resume_memory_occupation(std::span<ModelEngine> replicas, runner::MemoryKinds kinds);
// The kinds released on any rank of any replica.
runner::MemoryKinds released_memory(std::span<ModelEngine> replicas);

// SGLang's get_weights_by_name on one replica: the weight the checkpoint calls `name`, its
// tensor-parallel shares put together, as f32 (row-major) with its shape; NotFound for a name
// no rank holds. The engine must be paused. Not across nodes.
struct WeightValues {
  std::vector<int64_t> shape;
  std::vector<float> values;
};
Result<WeightValues> get_weights_by_name(ModelEngine& replica, const std::string& name);

// A node other than node 0 (SGLang's --node-rank > 0, with the same flags as node 0): joins
// node 0, loads this node's tensor-parallel ranks and runs every batch node 0 sends until it
// stops (OK) or its link breaks (the error).
Status run_follower_node(const std::filesystem::path& model_path,
                         const runner::ModelRunnerOptions& runner_options,
                         EngineOptions engine_options, const distributed::MultiNode& nodes);

}  // namespace sgl::engine
