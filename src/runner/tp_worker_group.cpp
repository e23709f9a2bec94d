// TpWorkerGroup: loading every rank.
#include "runner/tp_worker_group.h"

#include <optional>
#include <thread>

#include "backend/devices.h"
#include "core/logging.h"
#include "distributed/nccl_communicator.h"

namespace sgl::runner {
namespace {

// The GPU ranks: rank r on cuda:(base + r), one NCCL communicator each, every rank loaded on a
// thread of its own at once (their collectives meet while they load: the KV slot count they
// agree on, the warm-up and capture of the decode graphs).
Status create_gpu_ranks(const std::filesystem::path& model_path, const ModelRunnerOptions& options,
                        std::vector<std::unique_ptr<distributed::Communicator>>& communicators,
                        std::vector<std::unique_ptr<ModelRunner>>& runners) {
  const int n = options.tp_size, base = options.device.index;
  if (!distributed::nccl_available()) {
    return unimplemented("--tp-size " + std::to_string(n) +
                         " on CUDA needs NCCL: " + distributed::nccl_unavailable_reason());
  }
  const int visible = backend::cuda_device_count();
  if (base + n > visible) {
    return invalid_argument("--tp-size " + std::to_string(n) + " needs " + std::to_string(n) +
                            " GPUs (cuda:" + std::to_string(base) + " to cuda:" +
                            std::to_string(base + n - 1) + "), found " + std::to_string(visible) +
                            (base > 0 ? " (from --base-gpu-id " + std::to_string(base) + ")" : ""));
  }
  std::vector<int> devices;
  for (int r = 0; r < n; ++r) devices.push_back(base + r);
  SGL_ASSIGN_OR_RETURN(communicators, distributed::nccl_group(devices));
  std::vector<std::optional<Result<std::unique_ptr<ModelRunner>>>> loaded(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ModelRunnerOptions mine = options;
      mine.device = Device::cuda(devices[static_cast<size_t>(r)]);
      backend::set_current_device(mine.device);
      auto runner =
          ModelRunner::create(model_path, mine, communicators[static_cast<size_t>(r)].get());
      if (!runner.ok()) {
        // The others may wait in a collective for this rank: release them (their NCCL calls
        // fail) rather than leave them waiting forever.
        SGL_LOG_ERROR << "tensor-parallel rank " << r << " on " << mine.device.to_string() << ": "
                      << runner.status().to_string();
        for (auto& comm : communicators) distributed::abort_nccl(*comm);
      }
      loaded[static_cast<size_t>(r)] = std::move(runner);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    auto& runner = *loaded[static_cast<size_t>(r)];
    if (!runner.ok()) {
      return runner.status().with_context(
          "tensor-parallel rank " + std::to_string(r) +
          " on cuda:" + std::to_string(devices[static_cast<size_t>(r)]));
    }
    runners.push_back(std::move(runner).value());
  }
  SGL_LOG_INFO << "tensor parallelism: " << n << " ranks on cuda:" << base
               << " to cuda:" << base + n - 1 << " (NCCL), " << runners[0]->num_kv_slots()
               << " KV slots on each";
  return Status::ok_status();
}

}  // namespace

Result<std::unique_ptr<TpWorkerGroup>> TpWorkerGroup::create(
    const std::filesystem::path& model_path, const ModelRunnerOptions& options,
    std::unique_ptr<ModelRunner>* rank0) {
  SGL_CHECK(rank0 != nullptr);
  if (options.tp_size < 2) {
    return invalid_argument("a tensor-parallel group of " + std::to_string(options.tp_size) +
                            " ranks (--tp-size 1 needs none)");
  }
  std::unique_ptr<TpWorkerGroup> tp(new TpWorkerGroup(options.tp_size));
  if (options.device.is_cuda()) {
    std::vector<std::unique_ptr<ModelRunner>> runners;
    SGL_RETURN_IF_ERROR(create_gpu_ranks(model_path, options, tp->communicators_, runners));
    *rank0 = std::move(runners[0]);
    for (size_t r = 1; r < runners.size(); ++r) tp->workers_.push_back(std::move(runners[r]));
    return tp;
  }
  for (int r = 0; r < options.tp_size; ++r)
    tp->communicators_.push_back(tp->group_.communicator(r));
  ModelRunnerOptions first = options;
  if (first.num_kv_slots == 0 && first.device.is_cpu()) {
    // Each rank's pool is one share of the host memory the KV cache may take.
    first.mem_fraction_static =
        (options.mem_fraction_static > 0 ? options.mem_fraction_static : 0.2) / options.tp_size;
  }
  SGL_ASSIGN_OR_RETURN(*rank0, ModelRunner::create(model_path, first, tp->communicators_[0].get()));
  ModelRunnerOptions rest = options;
  rest.num_kv_slots = (*rank0)->num_kv_slots();  // the scheduler's slot ids index every pool
  for (int r = 1; r < options.tp_size; ++r) {
    auto runner = ModelRunner::create(model_path, rest, tp->communicators_[r].get());
    if (!runner.ok()) {
      rank0->reset();
      return runner.status().with_context("tensor-parallel rank " + std::to_string(r));
    }
    tp->workers_.push_back(std::move(runner).value());
  }
  SGL_LOG_INFO << "tensor parallelism: " << options.tp_size
               << " ranks on the CPU (shared-memory communicator)";
  if (options.ep_size > 1) {
    SGL_LOG_INFO << "expert parallelism: the experts over " << options.ep_size << " groups of "
                 << options.tp_size / options.ep_size << " ranks";
  }
  return tp;
}

}  // namespace sgl::runner
