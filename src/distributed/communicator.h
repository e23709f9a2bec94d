// Communicator: the collectives tensor, expert and data parallelism need, between the `size()`
// ranks of one group (SGLang's GroupCoordinator, NCCL's communicator). Every rank calls the same
// collectives in the same order with tensors of the same shape and dtype (a programming error
// otherwise, checked where cheap). Results are identical on every rank, bit for bit, so
// tensor-parallel ranks stay in lockstep without a broadcast: SharedMemoryGroup adds in rank
// order; NCCL (NcclCommunicator) adds in its own order (ring / tree), each element reduced once
// and the result copied to every rank, so its sums may differ in the last bits from the CPU
// group's, but not between ranks. Implementations: shared_memory_communicator.h (host tensors),
// nccl_communicator.h (tensors on the rank's GPU, on the caller's stream, graph-capturable).
#pragma once

#include <cstdint>

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::distributed {

enum class ReduceOp : uint8_t { kSum, kMax };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In place: `buffer` (contiguous f32 or bf16) becomes the element-wise reduction of every
  // rank's `buffer`. bf16: the shared-memory group reduces in f32 and rounds once; NCCL reduces
  // in bf16 (a rounding per step).
  virtual void all_reduce(const Tensor& buffer, ReduceOp op, backend::Stream stream) = 0;
  // all_reduce(x, kSum) and then the residual add + RMSNorm that follows a row-parallel block
  // (kernels' fused_add_rms_norm(x, residual, weight, eps)) as one operation, where this
  // communicator has one for these tensors (SGLang's all-reduce fusion): true once queued, with
  // the two calls' bits; false, queuing nothing, otherwise (the caller makes the two calls). The
  // answer depends only on what every rank's call shares (shapes, dtypes), so ranks agree.
  virtual bool all_reduce_add_rms_norm(const Tensor& x, const Tensor& residual,
                                       const Tensor& weight, float eps, backend::Stream stream) {
    return false;
  }
  // out [size * n] = every rank's `in` [n] (any contiguous dtype), in rank order. At one rank
  // `out` may be `in` (in place).
  virtual void all_gather(const Tensor& in, const Tensor& out, backend::Stream stream) = 0;
  // `in` [size * n]: chunk j (n elements) goes to rank j; `out` [size * n]: chunk i came from
  // rank i (expert parallelism's dispatch and combine, with equal chunks).
  virtual void all_to_all(const Tensor& in, const Tensor& out, backend::Stream stream) = 0;
  // In place: every rank's `buffer` becomes rank `root`'s.
  virtual void broadcast(const Tensor& buffer, int root, backend::Stream stream) = 0;
  // Returns once every rank has called it.
  virtual void barrier() = 0;
};

// Element-wise f32 reduction of `a` into `acc` (n elements): what every implementation's
// all_reduce computes, rank after rank.
void reduce_into(float* acc, const float* a, int64_t n, ReduceOp op);

}  // namespace sgl::distributed
