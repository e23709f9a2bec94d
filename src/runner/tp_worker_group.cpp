// TpWorkerGroup: loading every rank.
#include "runner/tp_worker_group.h"

#include "core/logging.h"

namespace sgl::runner {

Result<std::unique_ptr<TpWorkerGroup>> TpWorkerGroup::create(
    const std::filesystem::path& model_path, const ModelRunnerOptions& options,
    std::unique_ptr<ModelRunner>* rank0) {
  SGL_CHECK(rank0 != nullptr);
  if (options.tp_size < 2) {
    return invalid_argument("a tensor-parallel group of " + std::to_string(options.tp_size) +
                            " ranks (--tp-size 1 needs none)");
  }
  std::unique_ptr<TpWorkerGroup> tp(new TpWorkerGroup(options.tp_size));
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
