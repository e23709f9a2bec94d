// TpBatchRunner: one scheduler driving every rank of a tensor-parallel group (SGLang's TP worker
// model): each batch is given to every rank at once, rank 0 on the calling thread and the others
// on their own threads, each through its own ModelBatchRunner; rank 0's result is the result.
// Every rank gathers the whole logits and samples them with the same per-request seeds, so all
// ranks draw the same tokens (checked) and keep their token tables equal without a broadcast.
// On CUDA each rank is a GPU (the group's NCCL communicators): its thread makes its GPU current
// before it runs a batch; the logits gather and the sampling stay on each rank's GPU.
// Across nodes, node 0's runner also sends each batch to the other nodes (node_link.h) before
// its own ranks run it, and each other node runs its ranks through a TpBatchRunner of its own.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "cache/req_to_token_pool.h"
#include "runner/batch_executor.h"
#include "runner/model_batch_runner.h"
#include "runner/model_runner.h"
#include "runner/node_link.h"
#include "runner/tp_worker_group.h"

namespace sgl::runner {

class TpBatchRunner final : public ComputingBatchRunner {
 public:
  // Borrows this process's first rank's runner and the group's (which must outlive this
  // runner); `req_to_token` shapes each rank's token table, as for ModelBatchRunner. `followers`
  // (node 0 of several, their Start sent): the other nodes, sent every batch. `eagle_drafts`
  // (EAGLE, borrowed): one draft runner over each local rank, in rank order; every rank drafts
  // alike and verifies the same drafts.
  TpBatchRunner(ModelRunner& first, TpWorkerGroup& workers,
                const cache::ReqToTokenPool& req_to_token,
                std::unique_ptr<LeaderLink> followers = nullptr,
                std::span<EagleDraftRunner* const> eagle_drafts = {});
  ~TpBatchRunner() override;  // stops and joins the rank threads; stops the other nodes

 protected:
  ExecResult compute(const ExecBatch& batch) override;

 private:
  // Rank `rank`'s thread: runs each posted batch on its own copy (the batch's vocab-mask future
  // is read through a copy per thread).
  void rank_loop(int rank);

  std::unique_ptr<LeaderLink> followers_;
  std::vector<std::unique_ptr<ModelBatchRunner>> ranks_;  // [local ranks]
  std::vector<Device> devices_;                           // [local ranks]: each rank's device
  std::mutex mutex_;
  std::condition_variable posted_;    // a new batch_ (generation_ moved) or stop_
  std::condition_variable finished_;  // pending_ reached 0
  std::optional<ExecBatch> batch_;    // under mutex_: the batch the ranks run
  uint64_t generation_ = 0;           // under mutex_: batches posted
  int pending_ = 0;                   // under mutex_: ranks >= 1 still running batch_
  std::vector<ExecResult> results_;   // [local ranks]; ranks >= 1 write their own entry
  bool stop_ = false;                 // under mutex_
  std::vector<std::thread> threads_;  // local ranks 1 ..
};

}  // namespace sgl::runner
