// NcclCommunicator: the Communicator over NCCL, for ranks that are GPUs (issue #24). Each rank
// is one GPU driven by one host thread of this process (SGLang's TP workers, as threads); its
// collectives are queued on the CUDA stream the caller passes (a backend::Stream of the rank's
// device), so they order with the rank's kernels and can be captured into CUDA graphs (NCCL
// supports stream capture). Tensors must be contiguous and on the rank's GPU.
//
// Reductions: NCCL picks its own algorithm and order (ring / tree), so a sum is not added in
// rank order as SharedMemoryGroup's is, and may differ in the last bits from the CPU group's (or
// from one GPU's unsplit GEMM). Every rank still gets the same bits: NCCL's ring and tree
// all-reduce compute each element once and copy the result to every rank (NVLink SHARP / NVLS,
// whose in-switch reduction could break that, stays disabled: keep_nvlink_multicast_off()).
// bf16 is reduced by NCCL in bf16 (each step rounds), not in f32 rounded once.
//
// Built only with SGL_WITH_CUDA when CMake finds NCCL (nccl_available()); otherwise the factories
// return Unimplemented and tensor parallelism on CUDA is refused with that message.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "distributed/communicator.h"

namespace sgl::distributed {

// Whether this binary was built with NCCL.
bool nccl_available();
// Sets NCCL_NVLS_ENABLE=0 in this process, whatever the environment said: NVLink multicast can
// put a host's shared GPUs out of service (issue #25). NCCL reads its parameters once, at its
// first use in the process, so call this before that and before threads that may use NCCL start
// (setenv is not thread-safe); the factories below call it too, for callers that make
// communicators on one thread.
void keep_nvlink_multicast_off();
// Why not, for error messages (empty when it was).
const char* nccl_unavailable_reason();

// ncclUniqueId's bytes: made by one rank (nccl_unique_id), handed to the others (in this process,
// or over TCP by distributed/bootstrap.h), names the group they join.
using NcclUniqueId = std::array<uint8_t, 128>;
Result<NcclUniqueId> nccl_unique_id();

// Rank `rank` of `size` on CUDA device `device_index` (made current on the calling thread):
// ncclCommInitRank. Every rank of the group must call it at once (it returns when all joined).
Result<std::unique_ptr<Communicator>> nccl_communicator(const NcclUniqueId& id, int rank, int size,
                                                        int device_index);

// The ranks of one process at once: rank r on devices[r] (ncclCommInitAll; distinct devices:
// NCCL refuses two ranks of one communicator on one GPU). custom_all_reduce (SGLang's default;
// --disable-custom-all-reduce turns it off): small sums take PeerAllReduce's one-shot kernel
// over peer memory instead of NCCL, where every pair of GPUs has peer access (else NCCL, with
// a warning).
Result<std::vector<std::unique_ptr<Communicator>>> nccl_group(const std::vector<int>& devices,
                                                              bool custom_all_reduce = true);

// Aborts `comm`'s NCCL communicator (ncclCommAbort) so that ranks blocked in its collectives
// return (with an error) instead of waiting for a rank that failed; no-op for other
// communicators. The communicator is unusable afterwards.
void abort_nccl(Communicator& comm);

// The CUDA device a NCCL communicator's rank runs on (-1 for other communicators).
int nccl_device(const Communicator& comm);

}  // namespace sgl::distributed
