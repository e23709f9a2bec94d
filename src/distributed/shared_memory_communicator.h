// SharedMemoryGroup: a communicator group whose ranks are threads of one process, over host
// memory (the CPU backend's tensor / expert parallelism, and CI's proof that every sharding is
// exact). Each collective publishes the ranks' tensors, waits for all of them, lets every rank
// read the others' directly, and waits again before anyone may overwrite its input.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "distributed/communicator.h"

namespace sgl::distributed {

class SharedMemoryGroup {
 public:
  explicit SharedMemoryGroup(int size);
  int size() const { return size_; }
  // Rank `rank`'s communicator (one per thread; the group must outlive it).
  std::unique_ptr<Communicator> communicator(int rank);

 private:
  friend class SharedMemoryCommunicator;
  // Blocks until every rank arrived; reusable (generation counted).
  void arrive_and_wait();

  int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  // Per rank, what it published for the current collective.
  std::vector<const void*> inputs_;
  std::vector<int64_t> numels_;
  std::vector<int> dtypes_;
};

}  // namespace sgl::distributed
