// Starting the replicas of --dp-size: where each runs and how much memory it may take, then
// each loaded and started as one ModelEngine (its own weights, KV pool and scheduler).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "engine/model_engine.h"

namespace sgl::engine {

// Where the replicas run, decided once for all of them.
enum class ReplicaPlacement {
  kOwnDevice,    // CPU: each replica its own engine in host memory; CUDA: replica i on GPU base + i
  kSharedDevice  // CUDA with fewer GPUs than replicas: all on the base GPU, its budget split
};

// kOwnDevice on the CPU or when GPUs base .. base + n - 1 all exist; else kSharedDevice.
ReplicaPlacement place_replicas(Device base, int num_replicas);

// Replica `replica` of `num_replicas`' runner options. The static memory fraction (SGLang's
// --mem-fraction-static, our defaults when 0) is split so that the replicas together take what
// one engine would: on a shared GPU, where the pool is sized as total x fraction minus what is
// in use, replica i (loaded after replicas 0 .. i-1) gets fraction x (i + 1) / n; on the CPU,
// where it is a fraction of the memory still free, each gets fraction / n. An explicit KV slot
// count is given to every replica as is.
runner::ModelRunnerOptions replica_runner_options(const runner::ModelRunnerOptions& options,
                                                  int replica, int num_replicas,
                                                  ReplicaPlacement placement);

// Loads and starts `num_replicas` engines one after another (memory is measured after the
// previous replica took its share); their rids are numbered apart (number_replica_requests).
// `nodes`: node 0 of a group over several nodes (one replica only).
Result<std::vector<ModelEngine>> launch_data_parallel_engines(
    const std::filesystem::path& model_path, const runner::ModelRunnerOptions& runner_options,
    const EngineOptions& engine_options, const std::vector<int32_t>& extra_eos_ids,
    int num_replicas, const distributed::MultiNode& nodes = {});

}  // namespace sgl::engine
