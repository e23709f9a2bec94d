// TpWorkerGroup: the tensor-parallel ranks this process runs (SGLang's TP workers): their
// communicators and a ModelRunner per rank, each holding its shard of the weights and a KV pool
// of its KV heads, with one KV slot numbering for all (the scheduler's). On one node every rank
// is here; across nodes (--nnodes N) node n runs ranks [n L, (n + 1) L), L = tp_size / N, and its
// ranks join the group at --dist-init-addr's port + 1 (the node link, node_link.h, takes the
// port itself).
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/status.h"
#include "distributed/bootstrap.h"
#include "distributed/shared_memory_communicator.h"
#include "runner/model_runner.h"

namespace sgl::runner {

class TpWorkerGroup {
 public:
  // Joins this node's ranks of options.tp_size (> 1) to their group (`join_timeout`: how long
  // the ranks of other nodes may take), then loads them (load()).
  static Result<std::unique_ptr<TpWorkerGroup>> create(
      const std::filesystem::path& model_path, const ModelRunnerOptions& options,
      const distributed::MultiNode& nodes, std::unique_ptr<ModelRunner>* first,
      std::chrono::milliseconds join_timeout = std::chrono::minutes(10));
  // The two halves, for a follower node on the CPU: it joins, then learns node 0's KV slot
  // count, then loads.
  static Result<std::unique_ptr<TpWorkerGroup>> join(const ModelRunnerOptions& options,
                                                     const distributed::MultiNode& nodes,
                                                     std::chrono::milliseconds join_timeout);
  // Loads this node's ranks of `model_path`. The first goes to *first (the one the engine reads
  // sizes from; it must not outlive the group), the others stay in the group. On GPUs the ranks
  // size their KV pools from free memory and agree on the fewest slots; on the CPU the first
  // rank sizes its pool (mem_fraction_static shared out over this node's ranks) and the others
  // take its count; or every rank takes options.num_kv_slots when it is set.
  Status load(const std::filesystem::path& model_path, const ModelRunnerOptions& options,
              std::unique_ptr<ModelRunner>* first);

  // Ranks in this process, and the first one's global rank.
  int local_size() const { return static_cast<int>(communicators_.size()); }
  int first_rank() const { return first_rank_; }
  // This process's ranks' runners in rank order: `first` (the one load() gave out), then the
  // group's others.
  std::vector<ModelRunner*> ranks(ModelRunner& first) const {
    std::vector<ModelRunner*> out = {&first};
    for (const auto& w : workers_) out.push_back(w.get());
    return out;
  }

 private:
  TpWorkerGroup(int first_rank, int tp_size) : first_rank_(first_rank), tp_size_(tp_size) {}

  int first_rank_;
  int tp_size_;
  std::unique_ptr<distributed::SharedMemoryGroup> group_;  // the CPU ranks of one node
  std::vector<std::unique_ptr<distributed::Communicator>> communicators_;  // [local_size]
  std::vector<std::unique_ptr<ModelRunner>> workers_;  // local ranks 1 .. local_size - 1
};

}  // namespace sgl::runner
