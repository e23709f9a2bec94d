// TpBatchRunner: every rank runs every batch.
#include "runner/tp_batch_runner.h"

#include <exception>

#include "backend/devices.h"
#include "core/check.h"

namespace sgl::runner {

TpBatchRunner::TpBatchRunner(ModelRunner& first, TpWorkerGroup& workers,
                             const cache::ReqToTokenPool& req_to_token,
                             std::unique_ptr<LeaderLink> followers,
                             std::span<EagleDraftRunner* const> eagle_drafts)
    : followers_(std::move(followers)), results_(static_cast<size_t>(workers.local_size())) {
  SGL_CHECK(eagle_drafts.empty() || static_cast<int>(eagle_drafts.size()) == workers.local_size())
      << eagle_drafts.size() << " EAGLE draft runners for " << workers.local_size() << " ranks";
  const std::vector<ModelRunner*> runners = workers.ranks(first);
  for (ModelRunner* r : runners) devices_.push_back(r->options().device);
  // Each rank's batch runner is made on a thread of its own, on its device, all at once: an
  // EAGLE head captures its draft graphs as it is made (warm-up passes included), and their
  // collectives (the target's vocab-parallel embedding and LM head) meet only when every rank
  // runs them together.
  ranks_.resize(runners.size());
  std::vector<std::exception_ptr> failed(runners.size());
  std::vector<std::thread> makers;
  for (size_t i = 0; i < runners.size(); ++i) {
    makers.emplace_back([&, i] {
      try {
        backend::set_current_device(devices_[i]);
        ranks_[i] = std::make_unique<ModelBatchRunner>(
            *runners[i], req_to_token, eagle_drafts.empty() ? nullptr : eagle_drafts[i]);
      } catch (...) {
        failed[i] = std::current_exception();
      }
    });
  }
  for (std::thread& t : makers) t.join();
  for (const std::exception_ptr& e : failed) {
    if (e) std::rethrow_exception(e);
  }
  for (int i = 1; i < workers.local_size(); ++i) threads_.emplace_back([this, i] { rank_loop(i); });
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
  if (followers_ != nullptr) {
    // The other nodes' ranks meet these in the batch's collectives: without them this node's
    // would wait forever.
    const Status sent = followers_->send_batch(batch);
    SGL_CHECK(sent.ok()) << "serving across nodes: " << sent.to_string();
  }
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
  // Equal logits on every rank (gathered, reduced in rank order) sample equal tokens, and EAGLE
  // drafts equal drafts.
  for (size_t r = 1; r < ranks_.size(); ++r) {
    SGL_CHECK(results_[r].output.next_token_ids == result.output.next_token_ids)
        << "tensor-parallel rank " << r << " sampled other tokens than rank 0";
    SGL_CHECK(results_[r].draft_ids == result.draft_ids &&
              results_[r].draft_parents == result.draft_parents)
        << "tensor-parallel rank " << r << " drafted other tokens than rank 0";
  }
  return result;
}

}  // namespace sgl::runner
