// TpWorkerGroup: the ranks of one tensor-parallel group on the CPU (SGLang's TP workers): a
// shared-memory communicator group and a ModelRunner per rank, each holding its shard of the
// weights and a KV pool of its KV heads, with one KV slot numbering for all (the scheduler's).
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "core/status.h"
#include "distributed/shared_memory_communicator.h"
#include "runner/model_runner.h"

namespace sgl::runner {

class TpWorkerGroup {
 public:
  // Loads options.tp_size (> 1) ranks of `model_path`. Rank 0's runner goes to *rank0 (the one
  // the engine reads sizes from; it must not outlive the group), the others stay in the group.
  // Rank 0 sizes the KV pool (from memory: mem_fraction_static shared out over the ranks), the
  // others take its slot count.
  static Result<std::unique_ptr<TpWorkerGroup>> create(const std::filesystem::path& model_path,
                                                       const ModelRunnerOptions& options,
                                                       std::unique_ptr<ModelRunner>* rank0);

  int size() const { return group_.size(); }
  // Rank r's runner, r >= 1.
  ModelRunner& worker(int rank) { return *workers_.at(static_cast<size_t>(rank - 1)); }

 private:
  explicit TpWorkerGroup(int size) : group_(size) {}

  distributed::SharedMemoryGroup group_;
  std::vector<std::unique_ptr<distributed::Communicator>> communicators_;  // [size], by rank
  std::vector<std::unique_ptr<ModelRunner>> workers_;                      // ranks 1 .. size - 1
};

}  // namespace sgl::runner
