// Runs a function on every rank of a shared-memory tensor-parallel group, one thread per rank
// (the ranks' collectives meet across the threads), for tests of tensor parallelism.
#pragma once

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "distributed/shared_memory_communicator.h"

namespace sgl::test {

// fn(rank, communicator) on `size` threads; returns when all are done. fn must make the same
// collectives on every rank (a rank that returns early leaves the others waiting).
inline void run_ranks(int size, const std::function<void(int, distributed::Communicator&)>& fn) {
  distributed::SharedMemoryGroup group(size);
  std::vector<std::unique_ptr<distributed::Communicator>> comms;
  for (int r = 0; r < size; ++r) comms.push_back(group.communicator(r));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) threads.emplace_back([&, r] { fn(r, *comms[r]); });
  for (std::thread& t : threads) t.join();
}

}  // namespace sgl::test
