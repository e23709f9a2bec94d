// TpBatchRunner: every rank runs every batch.
#include "runner/tp_batch_runner.h"

#include "backend/devices.h"
#include "core/check.h"

namespace sgl::runner {

TpBatchRunner::TpBatchRunner(ModelRunner& rank0, TpWorkerGroup& workers,
                             const cache::ReqToTokenPool& req_to_token)
    : results_(static_cast<size_t>(workers.size())) {
  ranks_.push_back(std::make_unique<ModelBatchRunner>(rank0, req_to_token));
  devices_.push_back(rank0.options().device);
  for (int r = 1; r < workers.size(); ++r) {
    ranks_.push_back(std::make_unique<ModelBatchRunner>(workers.worker(r), req_to_token));
    devices_.push_back(workers.worker(r).options().device);
  }
  for (int r = 1; r < workers.size(); ++r) threads_.emplace_back([this, r] { rank_loop(r); });
}

TpBatchRunner::~TpBatchRunner() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  posted_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void TpBatchRunner::rank_loop(int rank) {
  uint64_t seen = 0;
  for (;;) {
    ExecBatch batch;
    {
      std::unique_lock lock(mutex_);
      posted_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      batch = *batch_;
    }
    // GPU ranks are threads: each launches on its own GPU.
    backend::set_current_device(devices_[static_cast<size_t>(rank)]);
    ExecResult result = ranks_[static_cast<size_t>(rank)]->run(batch);
    {
      std::lock_guard lock(mutex_);
      results_[static_cast<size_t>(rank)] = std::move(result);
      if (--pending_ == 0) finished_.notify_all();
    }
  }
}

ExecResult TpBatchRunner::compute(const ExecBatch& batch) {
  {
    std::lock_guard lock(mutex_);
    batch_ = batch;
    ++generation_;
    pending_ = static_cast<int>(ranks_.size()) - 1;
  }
  posted_.notify_all();
  // Rank 0 runs here, beside the others: their collectives meet inside the forward.
  backend::set_current_device(devices_[0]);
  ExecResult result = ranks_[0]->run(batch);
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [&] { return pending_ == 0; });
  // Equal logits on every rank (gathered, reduced in rank order) sample equal tokens.
  for (size_t r = 1; r < ranks_.size(); ++r) {
    SGL_CHECK(results_[r].output.next_token_ids == result.output.next_token_ids)
        << "tensor-parallel rank " << r << " sampled other tokens than rank 0";
  }
  return result;
}

}  // namespace sgl::runner
