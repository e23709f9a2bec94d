// Replica placement, memory split and start-up.
#include "engine/data_parallel_launch.h"

#include <algorithm>

#include "backend/backend.h"
#include "core/logging.h"
#include "engine/data_parallel_controller.h"

namespace sgl::engine {

ReplicaPlacement place_replicas(Device base, int num_replicas) {
  if (base.is_cpu()) return ReplicaPlacement::kOwnDevice;
  for (int i = 0; i < num_replicas; ++i) {
    if (!backend::check_device_available(Device::cuda(base.index + i)).ok()) {
      return ReplicaPlacement::kSharedDevice;
    }
  }
  return ReplicaPlacement::kOwnDevice;
}

runner::ModelRunnerOptions replica_runner_options(const runner::ModelRunnerOptions& options,
                                                  int replica, int num_replicas,
                                                  ReplicaPlacement placement) {
  runner::ModelRunnerOptions o = options;
  if (num_replicas <= 1) return o;
  const bool gpu = !options.device.is_cpu();
  if (gpu && placement == ReplicaPlacement::kOwnDevice) {
    // A tensor-parallel replica takes tp_size consecutive GPUs.
    o.device = Device::cuda(options.device.index + replica * options.tp_size);
    return o;
  }
  // The defaults of ModelRunner's pool sizing, made explicit to be split.
  const double fraction = options.mem_fraction_static > 0 ? options.mem_fraction_static
                          : gpu                           ? 0.88
                                                          : 0.2;
  o.mem_fraction_static = gpu ? fraction * (replica + 1) / num_replicas : fraction / num_replicas;
  return o;
}

Result<std::vector<ModelEngine>> launch_data_parallel_engines(
    const std::filesystem::path& model_path, const runner::ModelRunnerOptions& runner_options,
    const EngineOptions& engine_options, const std::vector<int32_t>& extra_eos_ids,
    int num_replicas, const distributed::MultiNode& nodes) {
  if (num_replicas < 1) {
    return invalid_argument("--dp-size must be >= 1, got " + std::to_string(num_replicas));
  }
  if (num_replicas > 1 && nodes.nnodes > 1) {
    return invalid_argument("--dp-size " + std::to_string(num_replicas) + " with --nnodes " +
                            std::to_string(nodes.nnodes) + " is not implemented");
  }
  const int tp = runner_options.tp_size;
  const ReplicaPlacement placement =
      place_replicas(runner_options.device, num_replicas * std::max(tp, 1));
  if (num_replicas > 1 && tp > 1 && !runner_options.device.is_cpu() &&
      placement == ReplicaPlacement::kSharedDevice) {
    return invalid_argument("--dp-size " + std::to_string(num_replicas) + " x --tp-size " +
                            std::to_string(tp) + " needs " + std::to_string(num_replicas * tp) +
                            " GPUs from " + runner_options.device.to_string() +
                            " (tensor-parallel replicas do not share GPUs)");
  }
  if (num_replicas > 1) {
    SGL_LOG_INFO << "data parallel: " << num_replicas << " replicas, "
                 << (runner_options.device.is_cpu() ? "each its own engine on the CPU"
                     : placement == ReplicaPlacement::kOwnDevice
                         ? std::to_string(std::max(tp, 1)) + " GPU(s) each from " +
                               runner_options.device.to_string()
                         : "sharing " + runner_options.device.to_string() +
                               " (its static memory budget split between them)")
                 << "; each loads its own copy of the weights";
  }
  std::vector<ModelEngine> replicas;
  replicas.reserve(static_cast<size_t>(num_replicas));
  for (int i = 0; i < num_replicas; ++i) {
    EngineOptions eo = engine_options;
    number_replica_requests(eo, i, num_replicas);
    auto me = launch_model_engine(
        model_path, replica_runner_options(runner_options, i, num_replicas, placement), eo,
        extra_eos_ids, nodes);
    if (!me.ok()) {
      if (num_replicas == 1) return me.status();
      return Status(me.status().code(), "data-parallel replica " + std::to_string(i) + " of " +
                                            std::to_string(num_replicas) + ": " +
                                            me.status().message());
    }
    replicas.push_back(std::move(me).value());
  }
  return replicas;
}

}  // namespace sgl::engine
