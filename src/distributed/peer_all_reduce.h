// PeerAllReduce: an all-reduce of small messages between the GPUs of one process, over peer
// memory (NVLink): SGLang's and vLLM's custom all-reduce, for the decode steps' all-reduces
// of a few to a few hundred kilobytes, where NCCL's latency dominates (issue #25). One kernel per
// rank, no barrier: each thread writes its 16-byte packs of the rank's buffer straight into
// every peer's inbox (a slot per source rank), then waits for every source's packs in its own
// inbox (a slot reads as empty, a sentinel, until its data lands: TensorRT-LLM's Lamport-style
// one-shot), sums them in rank order in f32, rounds once and writes the buffer. So every rank
// computes the same bits, as the Communicator contract asks, and a bf16 sum rounds once where
// NCCL's rounds at each step. Larger sums go two-shot: rank j sums chunk j of every rank's
// buffer the same way and pushes its sum to every peer (a reduce-scatter and an all-gather,
// each (n - 1) / n of the bytes a rank, where one-shot sends all of them to every peer). The
// reader empties each slot after reading it; inboxes alternate by call parity, so a peer writes
// a slot again only two calls later, after this rank's next call has sent it data. The call
// counters live in device memory: the kernel is captured into CUDA graphs and replayed like
// NCCL's.
//
// The kernels are launched programmatically (kernels/cuda/common/pdl.cuh), as the model's are.
// A second kernel folds the residual add + RMSNorm that follows a decode step's all-reduce into
// it (all_reduce_add_rms_norm: SGLang's all-reduce fusion).
//
// NcclCommunicator::all_reduce takes this path for sums of f32 / bf16 buffers of at most
// max_bytes() bytes (16-byte multiples), and all_reduce_add_rms_norm the fused kernel where
// applies_add_rms_norm says; larger sums and other collectives go to NCCL.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "backend/stream.h"
#include "core/status.h"
#include "core/tensor.h"
#include "distributed/communicator.h"

namespace sgl::distributed {

class PeerAllReduce {
 public:
  static constexpr int kMaxRanks = 8;
  // Sums up to these sizes go one-shot (vLLM's and SGLang's limits), larger ones two-shot.
  static constexpr int64_t kOneShotBytesTwoRanks = 512 * 1024;
  static constexpr int64_t kOneShotBytes = 256 * 1024;
  // The largest sum taken by default (a batch of 256 tokens' hidden states at 8192 in bf16 is 4
  // MB); past it, NCCL's bandwidth is the better bet.
  static constexpr int64_t kDefaultMaxBytes = 8 * 1024 * 1024;

  // The group of ranks on `devices` (rank r on devices[r], distinct, 2 to kMaxRanks):
  // enables peer access between every pair and allocates each rank's inboxes (4 x max(one-shot
  // limit, max_bytes / n) a peer and itself: 32 MB a GPU at the default limit).
  // Unimplemented (with the reason) where a pair of GPUs cannot reach each other's memory.
  // (Built in CUDA builds with NCCL only, for NcclCommunicator.)
  static Result<std::shared_ptr<PeerAllReduce>> create(const std::vector<int>& devices,
                                                       int64_t max_bytes = kDefaultMaxBytes);
  // Aborts (releasing any kernel still waiting for a peer) and waits for the ranks' devices
  // (all their work) before freeing. A CUDA graph that captured the group's kernels must not
  // be replayed after it.
  ~PeerAllReduce();
  PeerAllReduce(const PeerAllReduce&) = delete;
  PeerAllReduce& operator=(const PeerAllReduce&) = delete;

  int size() const { return static_cast<int>(devices_.size()); }
  int64_t max_bytes() const { return max_bytes_; }
  // Whether all_reduce takes `buffer` with `op` (else the caller's NCCL does).
  bool applies(const Tensor& buffer, ReduceOp op) const;
  // Rank `rank`'s part of an in-place sum, queued on `stream` (of the rank's device); every rank
  // calls it with a buffer of the same size (16-byte aligned), in the same order of calls, and
  // a rank's calls are ordered (one stream: its inboxes and counters are the rank's). A rank
  // that never calls leaves its peers waiting until abort(); after it, a sum returns unfinished
  // at its first wait (within 1024 empty reads).
  void all_reduce(int rank, const Tensor& buffer, backend::Stream stream);

  // Whether all_reduce_add_rms_norm takes these (rank-agnostic, as applies): x bf16 [T, D] and
  // residual f32 [T, D], contiguous, weight bf16 [D], T up to 16 (decode batches), D a multiple
  // of 8 up to 32768, x within the one-shot limit.
  bool applies_add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& weight) const;
  // all_reduce(x), then the residual add + RMSNorm that follows a row-parallel block (kernels'
  // fused_add_rms_norm: residual += x; x = rms_norm(residual) * weight), in one one-shot kernel
  // a rank: SGLang's all-reduce fusion, one launch instead of two. The same bits as the two
  // calls (same roundings, the norm kernel's threads and sum order). Same rules as all_reduce
  // (it is one of the rank's calls); every tensor on the rank's device, 16-byte aligned.
  void all_reduce_add_rms_norm(int rank, const Tensor& x, const Tensor& residual,
                               const Tensor& weight, float eps, backend::Stream stream);

  // Releases every rank's kernels that wait for a peer (they return, their sums unfinished) and
  // ends the group: as ncclCommAbort, for a rank that failed while the others wait in a sum.
  // Any thread, any time.
  void abort();
  bool aborted() const;

 private:
  PeerAllReduce(std::vector<int> devices, int64_t max_bytes)
      : devices_(std::move(devices)), max_bytes_(max_bytes) {}

  // The largest one-shot sum; an inbox slot's bytes (a one-shot sum, or a two-shot chunk).
  int64_t one_shot_bytes() const;
  int64_t slot_bytes() const;
  // Checks a tensor of rank `rank`'s call (on its device, 16-byte aligned).
  void check_call(int rank, const Tensor& buffer) const;

  std::vector<int> devices_;
  int64_t max_bytes_;
  // Pinned host memory the kernels read while they wait (mapped into every device's space):
  // nonzero once aborted.
  uint32_t* abort_flag_ = nullptr;
  // Per rank, on its device: its inboxes and call counters (peer_all_reduce.cu's layout).
  std::vector<void*> memory_;
};

}  // namespace sgl::distributed
