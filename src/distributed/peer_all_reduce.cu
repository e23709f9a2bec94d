// PeerAllReduce (peer_all_reduce.h): the one-shot and two-shot kernel, the one-shot kernel
// fused with the residual add + RMSNorm, and the peer memory they run on.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "core/check.h"
#include "distributed/peer_all_reduce.h"
#include "kernels/cuda/common/add_rms_norm_row.cuh"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/pdl.cuh"

namespace sgl::distributed {
namespace {

using kernels::cuda::add_chunk_into_residual;
using kernels::cuda::block_sum;
using kernels::cuda::kAddRmsNormMaxChunksPerThread;
using kernels::cuda::kAddRmsNormMaxThreads;
using kernels::cuda::launch_pdl;
using kernels::cuda::normed_chunk;
using kernels::cuda::pdl_launch_dependents;
using kernels::cuda::pdl_wait;
using kernels::cuda::with_add_rms_norm_chunks;

// Every call runs the same grid, so each block's call counter sees every call. 64 blocks (one
// wave): each thread waits for a pack at a time, and 16 blocks lost to NCCL past 2 MB
// (docs/perf-log/2026-11-30-custom-all-reduce.md).
constexpr int kBlocks = 64;
constexpr int kThreads = 512;
constexpr int kMaxRanks = PeerAllReduce::kMaxRanks;
// An empty inbox slot: -0.0 in every bf16 lane (0x80008000 as an f32 word, a negative
// denormal). Senders turn data that looks like it into zeros of the same sign's magnitude
// (bf16 -0.0 -> +0.0; the f32 word 0x80008000, -4.6e-41, -> -0.0), so a slot holds the
// sentinel until its data lands.
constexpr uint32_t kEmpty = 0x80008000u;

// A rank's memory: inbox[parity][phase][source] (slot_packs each; phase 1 only for two-shot
// calls), then its blocks' call counters.
struct Params {
  uint4* buffer;  // this rank's, packs of 16 bytes
  int64_t packs;
  int64_t chunk_packs;                  // two-shot: rank j reduces packs [j c, (j + 1) c)
  int64_t slot_packs;                   // an inbox slot, in packs
  uint4* inbox[kMaxRanks];              // each rank's inboxes, through peer memory
  uint32_t* calls;                      // this rank's [kBlocks]
  const volatile uint32_t* abort_flag;  // host memory: nonzero once the group is aborted
  int rank, ranks;
};

__device__ __forceinline__ void store_volatile(uint4* p, const uint4& v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}
__device__ __forceinline__ uint4 load_volatile(const uint4* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

template <typename T>
__device__ __forceinline__ bool is_empty_word(uint32_t w) {
  if constexpr (std::is_same_v<T, float>) return w == kEmpty;
  return (w & 0xffffu) == 0x8000u || (w >> 16) == 0x8000u;
}
template <typename T>
__device__ __forceinline__ uint32_t sendable_word(uint32_t w) {
  if constexpr (std::is_same_v<T, float>) return w == kEmpty ? 0x80000000u : w;
  if ((w & 0xffffu) == 0x8000u) w &= 0xffff0000u;
  if ((w >> 16) == 0x8000u) w &= 0x0000ffffu;
  return w;
}
template <typename T>
__device__ __forceinline__ bool is_empty(const uint4& v) {
  return is_empty_word<T>(v.x) || is_empty_word<T>(v.y) || is_empty_word<T>(v.z) ||
         is_empty_word<T>(v.w);
}
template <typename T>
__device__ __forceinline__ uint4 sendable(const uint4& v) {
  return {sendable_word<T>(v.x), sendable_word<T>(v.y), sendable_word<T>(v.z),
          sendable_word<T>(v.w)};
}

// Adds the 16 bytes `v` of dtype T into acc (8 bf16 or 4 f32 lanes).
template <typename T>
__device__ __forceinline__ void accumulate(float (&acc)[8], const uint4& v) {
  if constexpr (std::is_same_v<T, float>) {
    const float* f = reinterpret_cast<const float*>(&v);
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[e] += f[e];
  } else {
    const __nv_bfloat16* h = reinterpret_cast<const __nv_bfloat16*>(&v);
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] += __bfloat162float(h[e]);
  }
}

template <typename T>
__device__ __forceinline__ uint4 packed(const float (&acc)[8]) {
  uint4 out;
  if constexpr (std::is_same_v<T, float>) {
    float* f = reinterpret_cast<float*>(&out);
#pragma unroll
    for (int e = 0; e < 4; ++e) f[e] = acc[e];
  } else {
    __nv_bfloat16* h = reinterpret_cast<__nv_bfloat16*>(&out);
#pragma unroll
    for (int e = 0; e < 8; ++e) h[e] = __float2bfloat16_rn(acc[e]);
  }
  return out;
}

// The packs in `slot` once they land, the slot emptied; false (nothing taken) if the group is
// aborted first. The abort flag is host memory, slow to read: once every 1024 empty reads.
template <typename T>
__device__ __forceinline__ bool take(uint4* slot, uint4& v, const volatile uint32_t* abort_flag) {
  v = load_volatile(slot);
  for (uint32_t reads = 1; is_empty<T>(v); ++reads) {
    if (reads % 1024 == 0 && *abort_flag != 0) return false;
    v = load_volatile(slot);
  }
  store_volatile(slot, make_uint4(kEmpty, kEmpty, kEmpty, kEmpty));
  return true;
}

// The packs of slot `slot` of this rank's inbox, summed into acc in rank order with `own` as
// this rank's (each waited for, then emptied); false if the group is aborted first.
template <typename T>
__device__ __forceinline__ bool gather_sum(float (&acc)[8], const uint4& own, uint4* inbox,
                                           int64_t slot_packs, int64_t at, const Params& p) {
  for (int r = 0; r < p.ranks; ++r) {
    if (r == p.rank) {
      accumulate<T>(acc, own);
      continue;
    }
    uint4 v;
    if (!take<T>(inbox + r * slot_packs + at, v, p.abort_flag)) return false;
    accumulate<T>(acc, v);
  }
  return true;
}

// This call's number for the block (its counter + 1; the block stores it back at the end).
// Read after pdl_wait: this rank's previous sum, which writes it, may be the kernel just before
// (back-to-back sums).
__device__ __forceinline__ uint32_t call_number(const Params& p) {
  __shared__ uint32_t call;
  if (threadIdx.x == 0) call = *static_cast<volatile uint32_t*>(&p.calls[blockIdx.x]) + 1;
  __syncthreads();
  return call;
}

// The slots of `call`'s parity and `phase` in `rank`'s inbox (a slot per source rank).
__device__ __forceinline__ uint4* inbox_of(const Params& p, uint32_t call, int rank, int phase) {
  return p.inbox[rank] + ((call & 1) * 2 + phase) * p.ranks * p.slot_packs;
}

// One-shot's push: pack q of this rank (v, already sendable) into slot q of every peer's inbox.
__device__ __forceinline__ void push_to_peers(const Params& p, uint32_t call, int64_t q,
                                              const uint4& v) {
  for (int r = 0; r < p.ranks; ++r) {
    if (r != p.rank) store_volatile(inbox_of(p, call, r, 0) + p.rank * p.slot_packs + q, v);
  }
}

// One-shot: each thread pushes its packs into every peer's inbox (the slot of this rank, this
// call's parity), then waits for each source's packs in its own inbox and sums them in rank order.
// Two-shot (larger sums): rank j reduces chunk j. Each thread pushes its packs of chunk j to rank
// j; for its packs of this rank's chunk it waits for every source's, sums and pushes the sum to
// every peer (phase 1 of the inbox); for the other chunks it waits for their owners' sums. Either
// way a reader empties the slots it read: a peer writes them next two calls later, after this
// rank's next call sent it data, which this kernel's end orders after the emptying. A sum is
// sent as it is stored (sendable), so every rank holds the same bits.
template <typename T, bool kTwoShot>
__global__ void __launch_bounds__(kThreads)
    peer_all_reduce_kernel(const __grid_constant__ Params p) {
  pdl_wait();  // launched programmatically (pdl.cuh)
  pdl_launch_dependents();
  const uint32_t call = call_number(p);
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  constexpr int64_t kStride = static_cast<int64_t>(kBlocks) * kThreads;
  auto inbox = [&](int rank, int phase) { return inbox_of(p, call, rank, phase); };
  if constexpr (!kTwoShot) {
    for (int64_t q = first; q < p.packs; q += kStride)
      push_to_peers(p, call, q, sendable<T>(p.buffer[q]));
    for (int64_t q = first; q < p.packs; q += kStride) {
      float acc[8] = {};
      if (!gather_sum<T>(acc, sendable<T>(p.buffer[q]), inbox(p.rank, 0), p.slot_packs, q, p)) {
        return;  // aborted
      }
      p.buffer[q] = packed<T>(acc);
    }
  } else {
    const int64_t c = p.chunk_packs, mine0 = p.rank * c;
    const int64_t mine1 = min(mine0 + c, p.packs);
    for (int64_t q = first; q < p.packs; q += kStride) {
      const int owner = static_cast<int>(q / c);
      if (owner != p.rank) {
        store_volatile(inbox(owner, 0) + p.rank * p.slot_packs + (q - owner * c),
                       sendable<T>(p.buffer[q]));
      }
    }
    for (int64_t q = mine0 + first; q < mine1; q += kStride) {
      float acc[8] = {};
      if (!gather_sum<T>(acc, sendable<T>(p.buffer[q]), inbox(p.rank, 0), p.slot_packs, q - mine0,
                         p)) {
        return;  // aborted
      }
      const uint4 sum = sendable<T>(packed<T>(acc));
      for (int r = 0; r < p.ranks; ++r) {
        if (r != p.rank) store_volatile(inbox(r, 1) + p.rank * p.slot_packs + (q - mine0), sum);
      }
      p.buffer[q] = sum;
    }
    for (int64_t q = first; q < p.packs; q += kStride) {
      const int owner = static_cast<int>(q / c);
      if (owner == p.rank) continue;
      uint4 v;
      if (!take<T>(inbox(p.rank, 1) + owner * p.slot_packs + (q - owner * c), v, p.abort_flag)) {
        return;  // aborted
      }
      p.buffer[q] = v;
    }
  }
  if (threadIdx.x == 0) p.calls[blockIdx.x] = call;
}

// The fused residual add + RMSNorm's operands: x (Params::buffer) is bf16 [rows, 8 * chunks],
// residual f32 [rows, 8 * chunks].
struct NormParams {
  float4* residual;
  const uint4* weight;  // bf16 [8 * chunks]
  int64_t rows;
  int chunks;
  float eps;
};

// The fused kernel's rows at most (beyond, the all-reduce and the norm kernel measured faster),
// and the most that let the next kernel launch early.
constexpr int64_t kFoldMaxRows = 16;
constexpr int64_t kEarlyTriggerMaxRows = 8;

// One-shot all-reduce + residual add + RMSNorm, a block per row (up to kFoldMaxRows rows; the
// grid is kBlocks blocks whatever the rows, as the call counters need). Its threads hold the
// norm kernel's chunks (add_rms_norm_row.cuh) through the push, the sum (rounded to bf16 as
// all_reduce stores it), the add and the norm, and add their squares in that kernel's order
// with the same block_sum: that kernel's bits. Blocks must all be resident (create checks it): a
// block waits for its peers' same block. kEarlyTrigger: the next kernel may launch once the blocks
// are placed (pdl.cuh), else when they finish: launched early beside 9 to 16 rows' sums, the next
// kernel made TP 2 decode steps slower (docs/perf-log/2026-12-01-all-reduce-fusion.md).
template <int kChunks, bool kEarlyTrigger>
__global__ void __launch_bounds__(kAddRmsNormMaxThreads)
    peer_all_reduce_add_rms_norm_kernel(const __grid_constant__ Params p,
                                        const __grid_constant__ NormParams q) {
  auto chunk = [&](int c) { return static_cast<int>(threadIdx.x + c * blockDim.x); };
  uint4 w[kChunks];
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    if (chunk(c) < q.chunks) w[c] = q.weight[chunk(c)];  // weights: constant, before the wait
  }
  pdl_wait();
  if constexpr (kEarlyTrigger) pdl_launch_dependents();
  const uint32_t call = call_number(p);
  bool aborted = false;  // then the sums go on unfinished: every thread must reach block_sum
  if (blockIdx.x < q.rows) {
    const int64_t row = blockIdx.x;
    uint4* const x = p.buffer + row * q.chunks;
    float4* const residual = q.residual + 2 * row * q.chunks;
    const int64_t slot = row * q.chunks;  // the row's first pack in an inbox slot
    uint4 mine[kChunks];
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int i = chunk(c);
      if (i >= q.chunks) continue;
      mine[c] = sendable<__nv_bfloat16>(x[i]);
      push_to_peers(p, call, slot + i, mine[c]);
    }
    float v[kChunks][8];
    float sum_sq = 0.f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int i = chunk(c);
      if (i >= q.chunks) continue;
      float acc[8] = {};
      if (!aborted && !gather_sum<__nv_bfloat16>(acc, mine[c], inbox_of(p, call, p.rank, 0),
                                                 p.slot_packs, slot + i, p)) {
        aborted = true;
      }
      // The sum as all_reduce would store it, added in.
      add_chunk_into_residual(packed<__nv_bfloat16>(acc), residual + 2 * i, v[c], sum_sq);
    }
    const float inv = rsqrtf(block_sum(sum_sq) / static_cast<float>(8 * q.chunks) + q.eps);
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int i = chunk(c);
      if (i < q.chunks) x[i] = normed_chunk(v[c], inv, w[c]);
    }
  }
  if (threadIdx.x == 0 && !aborted) p.calls[blockIdx.x] = call;
}

__global__ void fill_empty(uint4* p, int64_t packs) {
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < packs;
       q += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    p[q] = make_uint4(kEmpty, kEmpty, kEmpty, kEmpty);
  }
}

Status cuda_status(cudaError_t result, const std::string& what) {
  if (result == cudaSuccess) return Status::ok_status();
  (void)cudaGetLastError();
  return internal_error(what + ": " + cudaGetErrorString(result));
}

}  // namespace

Result<std::shared_ptr<PeerAllReduce>> PeerAllReduce::create(const std::vector<int>& devices,
                                                             int64_t max_bytes) {
  const int n = static_cast<int>(devices.size());
  if (n < 2 || n > kMaxRanks) {
    return invalid_argument("a peer all-reduce of " + std::to_string(n) + " ranks (2 to " +
                            std::to_string(kMaxRanks) + ")");
  }
  if (max_bytes < 16 || max_bytes % 16 != 0) {
    return invalid_argument("a peer all-reduce of up to " + std::to_string(max_bytes) +
                            " bytes (a positive multiple of 16)");
  }
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i; ++j) {
      if (devices[i] == devices[j]) {
        return invalid_argument("peer all-reduce ranks " + std::to_string(j) + " and " +
                                std::to_string(i) + " both on cuda:" + std::to_string(devices[i]));
      }
    }
  }
  int previous = 0;
  SGL_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&previous), "cudaGetDevice"));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      int can = 0;
      SGL_RETURN_IF_ERROR(cuda_status(cudaDeviceCanAccessPeer(&can, devices[i], devices[j]),
                                      "cudaDeviceCanAccessPeer"));
      if (can == 0) {
        return unimplemented("cuda:" + std::to_string(devices[i]) + " cannot access cuda:" +
                             std::to_string(devices[j]) + "'s memory (no peer access)");
      }
    }
  }
  std::shared_ptr<PeerAllReduce> group(new PeerAllReduce(devices, max_bytes));
  void* flag = nullptr;
  SGL_RETURN_IF_ERROR(cuda_status(
      cudaHostAlloc(&flag, sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable),
      "cudaHostAlloc (peer all-reduce abort flag)"));
  group->abort_flag_ = static_cast<uint32_t*>(flag);
  *group->abort_flag_ = 0;
  // Each rank's device: its peers' memory mapped, its inboxes allocated and emptied.
  auto set_up = [&]() -> Status {
    for (int i = 0; i < n; ++i) {
      SGL_RETURN_IF_ERROR(cuda_status(cudaSetDevice(devices[i]), "cudaSetDevice"));
      for (int j = 0; j < n; ++j) {
        if (i == j) continue;
        const cudaError_t enabled = cudaDeviceEnablePeerAccess(devices[j], 0);
        if (enabled == cudaErrorPeerAccessAlreadyEnabled) {
          (void)cudaGetLastError();
          continue;
        }
        SGL_RETURN_IF_ERROR(
            cuda_status(enabled, "cudaDeviceEnablePeerAccess(cuda:" + std::to_string(devices[i]) +
                                     " -> cuda:" + std::to_string(devices[j]) + ")"));
      }
      void* memory = nullptr;
      const size_t inbox = 4 * static_cast<size_t>(n) * static_cast<size_t>(group->slot_bytes());
      SGL_RETURN_IF_ERROR(cuda_status(cudaMalloc(&memory, inbox + kBlocks * sizeof(uint32_t)),
                                      "cudaMalloc (peer inboxes)"));
      group->memory_.push_back(memory);
      fill_empty<<<256, 256>>>(static_cast<uint4*>(memory), static_cast<int64_t>(inbox / 16));
      SGL_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "fill_empty (peer inboxes)"));
      // A block of the two-shot and the fused kernels waits on other blocks' pushes (its own
      // rank's, or its peers' same block): every block must be resident at once.
      int sms = 0;
      SGL_RETURN_IF_ERROR(cuda_status(
          cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, devices[i]), "SM count"));
      int resident = std::numeric_limits<int>::max();  // the least resident kernel's blocks
      auto fewest = [&](auto kernel, int threads) -> Status {
        int per_sm = 0;
        SGL_RETURN_IF_ERROR(
            cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0),
                        "cudaOccupancyMaxActiveBlocksPerMultiprocessor"));
        resident = std::min(resident, sms * per_sm);
        return Status::ok_status();
      };
      SGL_RETURN_IF_ERROR(fewest(peer_all_reduce_kernel<__nv_bfloat16, true>, kThreads));
      SGL_RETURN_IF_ERROR(fewest(peer_all_reduce_kernel<float, true>, kThreads));
      using Fused = void (*)(Params, NormParams);
      for (Fused kernel : {peer_all_reduce_add_rms_norm_kernel<1, true>,
                           peer_all_reduce_add_rms_norm_kernel<2, true>,
                           peer_all_reduce_add_rms_norm_kernel<4, true>,
                           peer_all_reduce_add_rms_norm_kernel<1, false>,
                           peer_all_reduce_add_rms_norm_kernel<2, false>,
                           peer_all_reduce_add_rms_norm_kernel<4, false>}) {
        SGL_RETURN_IF_ERROR(fewest(kernel, kAddRmsNormMaxThreads));
      }
      if (resident < kBlocks) {
        return unimplemented("cuda:" + std::to_string(devices[i]) + " holds " +
                             std::to_string(resident) + " of the peer all-reduce's " +
                             std::to_string(kBlocks) + " blocks at once");
      }
      SGL_RETURN_IF_ERROR(cuda_status(
          cudaMemset(static_cast<uint8_t*>(memory) + inbox, 0, kBlocks * sizeof(uint32_t)),
          "cudaMemset"));
      SGL_RETURN_IF_ERROR(cuda_status(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
    }
    return Status::ok_status();
  };
  const Status status = set_up();
  (void)cudaSetDevice(previous);
  SGL_RETURN_IF_ERROR(status);
  return group;
}

// A kernel may still run on a rank's stream (or wait for a peer that will never call), writing
// into every rank's inboxes: the flag releases it, every device is drained, and only then is any
// memory freed.
PeerAllReduce::~PeerAllReduce() {
  if (abort_flag_ != nullptr) abort();
  int previous = 0;
  const bool restore = cudaGetDevice(&previous) == cudaSuccess;
  for (size_t r = 0; r < memory_.size(); ++r) {
    if (cudaSetDevice(devices_[r]) == cudaSuccess) (void)cudaDeviceSynchronize();
  }
  for (void* memory : memory_) cudaFree(memory);
  if (restore) (void)cudaSetDevice(previous);
  if (abort_flag_ != nullptr) cudaFreeHost(abort_flag_);
}

// Host threads share the word through atomics; the kernels read it with volatile loads.
void PeerAllReduce::abort() { __atomic_store_n(abort_flag_, 1u, __ATOMIC_RELEASE); }

bool PeerAllReduce::aborted() const { return __atomic_load_n(abort_flag_, __ATOMIC_ACQUIRE) != 0; }

// Only what every rank's call shares (op, dtype, size): were one rank to take NCCL and another
// this kernel, both would wait forever. all_reduce checks the alignment.
bool PeerAllReduce::applies(const Tensor& buffer, ReduceOp op) const {
  return op == ReduceOp::kSum &&
         (buffer.dtype() == DType::kF32 || buffer.dtype() == DType::kBF16) &&
         buffer.is_contiguous() && buffer.nbytes() > 0 && buffer.nbytes() <= max_bytes_ &&
         buffer.nbytes() % 16 == 0;
}

int64_t PeerAllReduce::one_shot_bytes() const {
  return std::min(max_bytes_, size() == 2 ? kOneShotBytesTwoRanks : kOneShotBytes);
}

int64_t PeerAllReduce::slot_bytes() const {
  const int64_t chunk = (max_bytes_ / 16 + size() - 1) / size() * 16;
  return std::max(one_shot_bytes(), chunk);
}

void PeerAllReduce::check_call(int rank, const Tensor& buffer) const {
  SGL_CHECK(rank >= 0 && rank < size() && buffer.device().is_cuda() &&
            buffer.device().index == devices_[rank] &&
            reinterpret_cast<uintptr_t>(buffer.raw()) % 16 == 0)
      << "peer all-reduce: rank " << rank << " of " << size() << ", " << buffer.shape_string()
      << " on " << buffer.device().to_string() << " (16-byte aligned data needed)";
}

namespace {

// Rank `rank`'s kernel parameters for a sum of `buffer` over the ranks' `memory`.
Params call_params(int rank, const Tensor& buffer, const std::vector<void*>& memory,
                   int64_t slot_bytes, const uint32_t* abort_flag) {
  const int ranks = static_cast<int>(memory.size());
  Params p{};
  p.buffer = static_cast<uint4*>(buffer.raw());
  p.packs = static_cast<int64_t>(buffer.nbytes()) / 16;
  p.chunk_packs = (p.packs + ranks - 1) / ranks;
  p.slot_packs = slot_bytes / 16;
  for (int r = 0; r < ranks; ++r) p.inbox[r] = static_cast<uint4*>(memory[static_cast<size_t>(r)]);
  p.calls = reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(memory[static_cast<size_t>(rank)]) +
                                        4 * static_cast<int64_t>(ranks) * slot_bytes);
  p.abort_flag = abort_flag;  // mapped pinned memory: the same address on every device (UVA)
  p.rank = rank;
  p.ranks = ranks;
  return p;
}

}  // namespace

void PeerAllReduce::all_reduce(int rank, const Tensor& buffer, backend::Stream stream) {
  SGL_CHECK(applies(buffer, ReduceOp::kSum))
      << "peer all-reduce: " << buffer.shape_string() << " " << dtype_name(buffer.dtype());
  check_call(rank, buffer);
  const Params p = call_params(rank, buffer, memory_, slot_bytes(), abort_flag_);
  const auto s = static_cast<cudaStream_t>(stream.native);
  const bool one_shot = static_cast<int64_t>(buffer.nbytes()) <= one_shot_bytes();
  const bool f32 = buffer.dtype() == DType::kF32;
  if (one_shot) {
    if (f32) {
      launch_pdl(peer_all_reduce_kernel<float, false>, dim3(kBlocks), dim3(kThreads), 0, s, p);
    } else {
      launch_pdl(peer_all_reduce_kernel<__nv_bfloat16, false>, dim3(kBlocks), dim3(kThreads), 0, s,
                 p);
    }
  } else if (f32) {
    launch_pdl(peer_all_reduce_kernel<float, true>, dim3(kBlocks), dim3(kThreads), 0, s, p);
  } else {
    launch_pdl(peer_all_reduce_kernel<__nv_bfloat16, true>, dim3(kBlocks), dim3(kThreads), 0, s, p);
  }
}

bool PeerAllReduce::applies_add_rms_norm(const Tensor& x, const Tensor& residual,
                                         const Tensor& weight) const {
  if (x.ndim() != 2 || x.dtype() != DType::kBF16 || residual.dtype() != DType::kF32 ||
      weight.dtype() != DType::kBF16 || !applies(x, ReduceOp::kSum) ||
      static_cast<int64_t>(x.nbytes()) > one_shot_bytes()) {
    return false;
  }
  const int64_t d = x.size(1);
  return x.size(0) <= kFoldMaxRows && d % 8 == 0 &&
         d / 8 <= kAddRmsNormMaxChunksPerThread * kAddRmsNormMaxThreads &&
         residual.is_contiguous() && residual.ndim() == 2 && residual.size(0) == x.size(0) &&
         residual.size(1) == d && weight.is_contiguous() && weight.numel() == d;
}

void PeerAllReduce::all_reduce_add_rms_norm(int rank, const Tensor& x, const Tensor& residual,
                                            const Tensor& weight, float eps,
                                            backend::Stream stream) {
  SGL_CHECK(applies_add_rms_norm(x, residual, weight))
      << "peer all-reduce + RMSNorm: x " << x.shape_string() << " " << dtype_name(x.dtype())
      << ", residual " << residual.shape_string() << " " << dtype_name(residual.dtype())
      << ", weight " << weight.shape_string() << " " << dtype_name(weight.dtype());
  check_call(rank, x);
  check_call(rank, residual);
  check_call(rank, weight);
  const Params p = call_params(rank, x, memory_, slot_bytes(), abort_flag_);
  NormParams q{};
  q.residual = static_cast<float4*>(residual.raw());
  q.weight = static_cast<const uint4*>(weight.raw());
  q.rows = x.size(0);
  q.chunks = static_cast<int>(x.size(1) / 8);
  q.eps = eps;
  const auto s = static_cast<cudaStream_t>(stream.native);
  const bool early = q.rows <= kEarlyTriggerMaxRows;
  with_add_rms_norm_chunks(q.chunks, [&](auto per_thread, int threads) {
    constexpr int kChunks = decltype(per_thread)::value;
    launch_pdl(early ? peer_all_reduce_add_rms_norm_kernel<kChunks, true>
                     : peer_all_reduce_add_rms_norm_kernel<kChunks, false>,
               dim3(kBlocks), dim3(threads), 0, s, p, q);
  });
}

}  // namespace sgl::distributed
