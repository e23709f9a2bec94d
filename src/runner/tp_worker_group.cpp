// TpWorkerGroup: joining the group and loading this process's ranks.
#include "runner/tp_worker_group.h"

#include <optional>
#include <string>
#include <thread>

#include "backend/devices.h"
#include "core/logging.h"
#include "distributed/nccl_communicator.h"
#include "distributed/socket_communicator.h"

namespace sgl::runner {
namespace {

using Communicators = std::vector<std::unique_ptr<distributed::Communicator>>;

// Where the ranks of several nodes join: --dist-init-addr's port + 1.
distributed::DistInitAddr group_addr(const distributed::MultiNode& nodes) {
  distributed::DistInitAddr addr = *nodes.dist_init_addr;
  addr.port = static_cast<uint16_t>(addr.port + 1);
  return addr;
}

// Runs make(i) for i in [0, n) on a thread each, all at once (the ranks of a group join, and
// on GPUs load, together); the first error, naming global rank first_rank + i, if any failed.
template <typename T, typename Make>
Result<std::vector<T>> on_threads(int n, int first_rank, const std::string& where, Make make) {
  std::vector<std::optional<Result<T>>> made(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] { made[static_cast<size_t>(i)] = make(i); });
  }
  for (std::thread& t : threads) t.join();
  std::vector<T> out;
  for (int i = 0; i < n; ++i) {
    auto& r = *made[static_cast<size_t>(i)];
    if (!r.ok()) {
      return r.status().with_context("tensor-parallel rank " + std::to_string(first_rank + i) +
                                     where);
    }
    out.push_back(std::move(r).value());
  }
  return out;
}

// The CPU ranks of several nodes: a socket communicator each.
Result<Communicators> join_socket_group(const ModelRunnerOptions& options,
                                        const distributed::MultiNode& nodes, int local,
                                        int first_rank, std::chrono::milliseconds timeout) {
  const distributed::DistInitAddr addr = group_addr(nodes);
  return on_threads<std::unique_ptr<distributed::Communicator>>(
      local, first_rank, "", [&](int i) -> Result<std::unique_ptr<distributed::Communicator>> {
        SGL_ASSIGN_OR_RETURN(
            std::unique_ptr<distributed::SocketCommunicator> c,
            distributed::SocketCommunicator::join(addr, first_rank + i, options.tp_size, timeout));
        return std::unique_ptr<distributed::Communicator>(std::move(c));
      });
}

// The GPU ranks of several nodes: node 0 makes the NCCL id and serves it to the other nodes
// (bootstrap.h's IdServer), every rank joins by it.
Result<Communicators> join_nccl_by_id(const ModelRunnerOptions& options,
                                      const distributed::MultiNode& nodes,
                                      const std::vector<int>& devices, int first_rank,
                                      std::chrono::milliseconds timeout) {
  const distributed::DistInitAddr addr = group_addr(nodes);
  distributed::keep_nvlink_multicast_off();  // before the rank threads below
  distributed::NcclUniqueId id{};
  std::unique_ptr<distributed::IdServer> server;
  if (nodes.node_rank == 0) {
    SGL_ASSIGN_OR_RETURN(id, distributed::nccl_unique_id());
    SGL_ASSIGN_OR_RETURN(
        server, distributed::IdServer::start(addr, std::vector<uint8_t>(id.begin(), id.end()),
                                             nodes.nnodes - 1));
  } else {
    SGL_ASSIGN_OR_RETURN(const std::vector<uint8_t> blob, distributed::fetch_id(addr, timeout));
    if (blob.size() != id.size()) {
      return invalid_argument("the NCCL id from " + addr.to_string() + " has " +
                              std::to_string(blob.size()) + " bytes, not " +
                              std::to_string(id.size()));
    }
    std::copy(blob.begin(), blob.end(), id.begin());
  }
  // The server lives until every rank joined, which needs every node to have fetched the id.
  return on_threads<std::unique_ptr<distributed::Communicator>>(
      static_cast<int>(devices.size()), first_rank, "", [&](int i) {
        return distributed::nccl_communicator(id, first_rank + i, options.tp_size,
                                              devices[static_cast<size_t>(i)]);
      });
}

// local GPU ranks' devices: cuda:(base + i), checked against the GPUs there are.
Result<std::vector<int>> gpu_devices(const ModelRunnerOptions& options,
                                     const distributed::MultiNode& nodes, int local) {
  const int base = options.device.index;
  if (!distributed::nccl_available()) {
    return unimplemented("--tp-size " + std::to_string(options.tp_size) +
                         " on CUDA needs NCCL: " + distributed::nccl_unavailable_reason());
  }
  const int visible = backend::cuda_device_count();
  if (base + local > visible) {
    return invalid_argument(
        "--tp-size " + std::to_string(options.tp_size) +
        (nodes.nnodes > 1 ? " over " + std::to_string(nodes.nnodes) + " nodes" : std::string()) +
        " needs " + std::to_string(local) + " GPUs here (cuda:" + std::to_string(base) +
        " to cuda:" + std::to_string(base + local - 1) + "), found " + std::to_string(visible) +
        (base > 0 ? " (from --base-gpu-id " + std::to_string(base) + ")" : ""));
  }
  std::vector<int> devices;
  for (int i = 0; i < local; ++i) devices.push_back(base + i);
  return devices;
}

}  // namespace

Result<std::unique_ptr<TpWorkerGroup>> TpWorkerGroup::join(const ModelRunnerOptions& options,
                                                           const distributed::MultiNode& nodes,
                                                           std::chrono::milliseconds join_timeout) {
  if (options.tp_size < 2) {
    return invalid_argument("a tensor-parallel group of " + std::to_string(options.tp_size) +
                            " ranks (--tp-size 1 needs none)");
  }
  SGL_RETURN_IF_ERROR(distributed::check_multi_node(nodes));
  SGL_RETURN_IF_ERROR(distributed::check_ranks_per_node(options.tp_size, nodes));
  const int local = options.tp_size / nodes.nnodes;
  const int first_rank = nodes.node_rank * local;
  std::unique_ptr<TpWorkerGroup> tp(new TpWorkerGroup(first_rank, options.tp_size));
  if (options.device.is_cuda()) {
    SGL_ASSIGN_OR_RETURN(const std::vector<int> devices, gpu_devices(options, nodes, local));
    if (nodes.nnodes > 1) {
      SGL_ASSIGN_OR_RETURN(tp->communicators_,
                           join_nccl_by_id(options, nodes, devices, first_rank, join_timeout));
    } else {
      SGL_ASSIGN_OR_RETURN(tp->communicators_,
                           distributed::nccl_group(devices, !options.disable_custom_all_reduce));
    }
  } else if (nodes.nnodes > 1) {
    SGL_ASSIGN_OR_RETURN(tp->communicators_,
                         join_socket_group(options, nodes, local, first_rank, join_timeout));
  } else {
    tp->group_ = std::make_unique<distributed::SharedMemoryGroup>(options.tp_size);
    for (int r = 0; r < options.tp_size; ++r) {
      tp->communicators_.push_back(tp->group_->communicator(r));
    }
  }
  return tp;
}

Result<std::unique_ptr<TpWorkerGroup>> TpWorkerGroup::create(
    const std::filesystem::path& model_path, const ModelRunnerOptions& options,
    const distributed::MultiNode& nodes, std::unique_ptr<ModelRunner>* first,
    std::chrono::milliseconds join_timeout) {
  SGL_ASSIGN_OR_RETURN(std::unique_ptr<TpWorkerGroup> tp, join(options, nodes, join_timeout));
  SGL_RETURN_IF_ERROR(tp->load(model_path, options, first));
  return tp;
}

Status TpWorkerGroup::load(const std::filesystem::path& model_path,
                           const ModelRunnerOptions& options, std::unique_ptr<ModelRunner>* first) {
  SGL_CHECK(first != nullptr && workers_.empty() && options.tp_size == tp_size_);
  const int local = local_size();
  std::vector<std::unique_ptr<ModelRunner>> runners;
  if (options.device.is_cuda()) {
    // Every GPU rank loads on a thread of its own at once: their collectives meet while they
    // load (the KV slot count they agree on, the warm-up and capture of the decode graphs).
    SGL_ASSIGN_OR_RETURN(
        runners,
        on_threads<std::unique_ptr<ModelRunner>>(
            local, first_rank_, " on the GPU", [&](int i) -> Result<std::unique_ptr<ModelRunner>> {
              ModelRunnerOptions mine = options;
              mine.device = Device::cuda(options.device.index + i);
              backend::set_current_device(mine.device);
              auto runner = ModelRunner::create(model_path, mine,
                                                communicators_[static_cast<size_t>(i)].get());
              if (!runner.ok()) {
                // The others may wait in a collective for this rank: release them (their NCCL
                // calls fail) rather than leave them waiting forever.
                SGL_LOG_ERROR << "tensor-parallel rank " << first_rank_ + i << " on "
                              << mine.device.to_string() << ": " << runner.status().to_string();
                for (auto& comm : communicators_) distributed::abort_nccl(*comm);
              }
              return runner;
            }));
  } else {
    // The CPU ranks load one after another (no collective meets while they load).
    // Rank 0 sizes its pool from one share of the host memory the KV cache may take (an
    // explicit --max-total-tokens is capped at that share too); the others are given its count
    // (with the whole fraction, so that the memory rank 0 left them holds it).
    ModelRunnerOptions mine = options;
    mine.mem_fraction_static =
        (options.mem_fraction_static > 0 ? options.mem_fraction_static : 0.2) / local;
    for (int i = 0; i < local; ++i) {
      auto runner =
          ModelRunner::create(model_path, mine, communicators_[static_cast<size_t>(i)].get());
      if (!runner.ok()) {
        return runner.status().with_context("tensor-parallel rank " +
                                            std::to_string(first_rank_ + i));
      }
      runners.push_back(std::move(runner).value());
      // The scheduler's slot ids index every rank's pool: a rank that could not hold rank 0's
      // count (size_kv_pool caps it at its memory) must not serve with a smaller one.
      if (runners.back()->num_kv_slots() != runners[0]->num_kv_slots()) {
        return resource_exhausted(
            "tensor-parallel rank " + std::to_string(first_rank_ + i) + ": its KV pool holds " +
            std::to_string(runners.back()->num_kv_slots()) + " slots, rank " +
            std::to_string(first_rank_) + "'s " + std::to_string(runners[0]->num_kv_slots()) +
            " (too little host memory left; lower --max-total-tokens or --mem-fraction-static)");
      }
      mine = options;
      mine.num_kv_slots = runners[0]->num_kv_slots();
    }
  }
  *first = std::move(runners[0]);
  for (size_t i = 1; i < runners.size(); ++i) workers_.push_back(std::move(runners[i]));
  SGL_LOG_INFO << "tensor parallelism: ranks " << first_rank_ << " to " << first_rank_ + local - 1
               << " of " << tp_size_
               << (options.device.is_cuda()
                       ? " on cuda:" + std::to_string(options.device.index) +
                             " to cuda:" + std::to_string(options.device.index + local - 1)
                       : std::string(" on the CPU"))
               << ", " << (*first)->num_kv_slots() << " KV slots on each";
  if (options.ep_size > 1) {
    SGL_LOG_INFO << "expert parallelism: the experts over " << options.ep_size << " groups of "
                 << options.tp_size / options.ep_size << " ranks";
  }
  return Status::ok_status();
}

}  // namespace sgl::runner
