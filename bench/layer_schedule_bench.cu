// What a whole-layer persistent kernel could reach for Qwen3-30B-A3B decode at batch 1, before
// anyone writes one. A skeleton of the layer: one CTA an SM runs all 48 layers, meeting at grid
// barriers, with each phase's real bytes (qkv, attention's KV, o projection, router, the eight
// routed experts' gate/up and down, picked by a real top-8 from 128 at random places) dotted
// against an f32 activation vector, the route a real top-8 of 128 logits in every CTA, and
// attention either done for real (scalar FMAs over 1024 keys, 16 CTAs) or stood in for by its
// KV read and a spin of `attention ns`.
// The numbers are not a model's outputs; only the schedule and the bytes are real. Schedules:
//   serial      every phase streams its weights after the barrier before it
//   registers   ... and issues its first loads before that barrier (the launch chain's rule)
//   qkv-smem    registers + the o projection bulk-loaded into shared memory during attention,
//               the router rows with it, and the next layer's qkv during the router, the route
//               and the experts (its 21 MB is in shared memory when the layer begins)
//   down-smem   registers + the o projection during attention and this CTA's share of the
//               experts' down rows from the route on
//   bytes-only  the same loads with no barriers and no stand-ins (a bound: wrong data)
// Prints microseconds per layer and the share of the layer's bytes at the copy floor measured in
// the same run ("attn ns": the stand-in at the rated clock; "MHz": the clock the SMs ran at).
// Measured numbers: docs/perf-log/2026-12-08-layer-schedule.md.
//   cmake --build --preset cuda --target layer_schedule_bench &&
//     build/cuda/bench/layer_schedule_bench [rounds]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_bench.cuh"

namespace {

enum Schedule { kStreamOnly, kSerial, kRegisters, kQkvInSmem, kDownInSmem };
constexpr const char* kScheduleNames[] = {"bytes-only", "serial", "registers", "qkv-smem",
                                          "down-smem"};

constexpr int kThreads = 384;  // 168 registers a thread: no spills
constexpr int kInFlight = 8;   // 16-byte loads a thread keeps in flight, as the GEMVs do
constexpr int kLayers = 48;
// Qwen3-30B-A3B: hidden 2048, 32 q and 4 KV heads of 128, 128 experts of 768, top 8.
constexpr int kHidden = 2048;
constexpr int kQkvRows = 5120;
constexpr int kAttnWidth = 4096;
constexpr int kExperts = 128;
constexpr int kTopK = 8;
constexpr int kInter = 768;
constexpr size_t kKvBytes = size_t{1024} * 4 * 128 * 2 * 2;  // 1024 keys, K and V, bf16
constexpr int kAttnCtas = 16;                                // 4 KV heads x 4 splits
constexpr int kAttnSplits = 4;
constexpr int kContext = 1024;
constexpr int kHeadDim = 128;
constexpr int kGroup = 8;  // q heads a KV head
constexpr int kSplitKeys = kContext / kAttnSplits;
constexpr int kStampLayer = 24;
constexpr int kPhases = 7;
constexpr int kSteadyFrom = kPhases + 1, kSteadyTo = kPhases + 2, kClockFrom = kPhases + 3,
              kClockTo = kPhases + 4, kStamps = kPhases + 5;
constexpr const char* kPhaseNames[kPhases] = {"qkv",   "attention", "o",   "router",
                                              "route", "gate/up",   "down"};

constexpr size_t kVec = sizeof(uint4);  // 8 bf16
constexpr size_t kQkvVectors = size_t{kQkvRows} * kHidden / 8;
constexpr size_t kOVectors = size_t{kHidden} * kAttnWidth / 8;
constexpr size_t kRouterRowVectors = kHidden / 8;
constexpr size_t kGateUpExpertVectors = size_t{2 * kInter} * kHidden / 8;
constexpr size_t kDownExpertVectors = size_t{kHidden} * kInter / 8;

// Shared memory: the activation vector (up to the experts' 8 x 768), one router row, and the
// weight region the bulk loads fill.
constexpr int kXFloats = kTopK * kInter;
constexpr size_t kSmemBytes = 225 * 1024;  // under the 227 KB opt-in with the static part
constexpr size_t kRegionOffset = kXFloats * sizeof(float) + kRouterRowVectors * kVec + 64;

struct LayerWeights {
  const uint4* qkv;      // [5120][2048]
  const uint4* o;        // [2048][4096]
  const uint4* router;   // [128][2048]
  const uint4* kv;       // 2 MiB
  const uint4* gate_up;  // [128][1536][2048]
  const uint4* down;     // [128][2048][768]
};

struct Params {
  const LayerWeights* layers;
  float* hidden;   // [4096]
  float* partial;  // [kAttnSplits][4096]
  float* logits;   // [kLayers][128]
  float* act;      // [8 x 768]
  float* sink;     // [grid]
  unsigned* arrived;
  // CTA 0's clocks: [0, 8) %globaltimer at layer kStampLayer's start and each phase's end;
  // kSteadyFrom, kSteadyTo: at layer 1's start and the last layer's end (the steady layers,
  // past the launch and the first layer's prologue); kClockFrom, kClockTo: clock64 there.
  unsigned long long* stamps;
  Schedule schedule;
  long long attention_cycles;  // < 0: attention done for real (decode_attention)
  size_t region_vectors;       // the weight region's capacity
};

// ---- small device helpers ----------------------------------------------------------------

template <typename T>
__device__ __forceinline__ T min_of(T a, T b) {
  return a < b ? a : b;
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Grid barrier over a monotonic arrival count (zeroed before each launch): the k-th barrier
// waits for k x grid arrivals.
__device__ void grid_sync(unsigned* arrived, unsigned& target) {
  target += gridDim.x;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(arrived, 1u);
    while (load_acquire(arrived) < target) {
    }
  }
  __syncthreads();
}

struct Range {
  size_t begin, end;  // in 16-byte vectors
};

__device__ __forceinline__ Range share_of(size_t total, int part, int parts) {
  const size_t per = (total + parts - 1) / parts;
  const size_t begin = min_of(per * part, total);
  return {begin, min_of(begin + per, total)};
}

__device__ __forceinline__ float dot8(uint4 v, const float* x) {
  const float4 a = *reinterpret_cast<const float4*>(x);
  const float4 b = *reinterpret_cast<const float4*>(x + 4);
  float s = __uint_as_float(v.x << 16) * a.x;
  s = fmaf(__uint_as_float(v.x & 0xffff0000u), a.y, s);
  s = fmaf(__uint_as_float(v.y << 16), a.z, s);
  s = fmaf(__uint_as_float(v.y & 0xffff0000u), a.w, s);
  s = fmaf(__uint_as_float(v.z << 16), b.x, s);
  s = fmaf(__uint_as_float(v.z & 0xffff0000u), b.y, s);
  s = fmaf(__uint_as_float(v.w << 16), b.z, s);
  return fmaf(__uint_as_float(v.w & 0xffff0000u), b.w, s);
}

// One thread's part of a streamed GEMV share: `first` may be issued early (before a barrier).
struct Stream {
  const uint4* w = nullptr;
  Range range{0, 0};
  uint4 first[kInFlight];

  __device__ void issue_first() {
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      const size_t j = range.begin + threadIdx.x + static_cast<size_t>(k) * kThreads;
      first[k] = j < range.end ? load_streaming(w + j) : make_uint4(0, 0, 0, 0);
    }
  }

  // x holds kRowVectors x 8 values; vector j of the weights meets x[(j % kRowVectors) x 8].
  template <int kRowVectors>
  __device__ float dot(const float* x, bool issued) {
    if (!issued) issue_first();
    float acc = 0;
    for (size_t i = range.begin + threadIdx.x; i < range.end; i += kInFlight * kThreads) {
      uint4 v[kInFlight];
      const size_t next = i + kInFlight * kThreads;
#pragma unroll
      for (int k = 0; k < kInFlight; ++k) {
        const size_t j = next + static_cast<size_t>(k) * kThreads;
        v[k] = j < range.end ? load_streaming(w + j) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int k = 0; k < kInFlight; ++k) {
        const size_t j = i + static_cast<size_t>(k) * kThreads;
        if (j < range.end) acc += dot8(first[k], x + (j % kRowVectors) * 8);
        first[k] = v[k];
      }
    }
    return acc;
  }
};

template <int kRowVectors>
__device__ float smem_dot(const uint4* w, size_t n, const float* x) {
  float acc = 0;
  for (size_t j = threadIdx.x; j < n; j += kThreads) acc += dot8(w[j], x + (j % kRowVectors) * 8);
  return acc;
}

// Bulk copies (thread 0) of global ranges into shared memory, completing on `bar`.
struct BulkLoad {
  uint64_t* bar;
  uint32_t phase = 0;
  bool pending = false;

  // Every thread calls these (after a __syncthreads that ends the region's readers); thread 0
  // issues.
  __device__ void start(uint32_t bytes) {
    if (threadIdx.x == 0) {
      // The region's generic-proxy reads before the bulk copies' writes.
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
                   "r"(bytes)
                   : "memory");
    }
    pending = true;
  }
  __device__ void copy(void* dst, const void* src, uint32_t bytes) {
    if (threadIdx.x != 0) return;
    constexpr uint32_t kChunk = 16384;
    for (uint32_t off = 0; off < bytes; off += kChunk) {
      const uint32_t n = min_of(kChunk, bytes - off);
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
          "[%3];" ::"r"(smem_addr(static_cast<char*>(dst) + off)),
          "l"(static_cast<const char*>(src) + off), "r"(n), "r"(smem_addr(bar))
          : "memory");
    }
  }
  // Waits for the copies started last.
  __device__ void wait() {
    if (!pending) return;
    asm volatile(
        "{\n.reg .pred done;\nWAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT_%=;\n}\n" ::"r"(smem_addr(bar)),
        "r"(phase)
        : "memory");
    phase ^= 1;
    pending = false;
  }
};

__device__ void load_x(float* xs, const float* src, int n) {
  for (int i = threadIdx.x * 4; i < n; i += kThreads * 4)
    *reinterpret_cast<float4*>(xs + i) = __ldcg(reinterpret_cast<const float4*>(src + i));
  __syncthreads();
}

__device__ float block_sum(float v, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float s = 0;
  for (int w = 0; w < kThreads / 32; ++w) s += scratch[w];
  return s;
}

// The top 8 of 128 logits (each nudged by a per-layer hash so the picks move), by one warp.
__device__ void route(const float* logits, int layer, int* picks) {
  if (threadIdx.x >= 32) return;
  const int lane = threadIdx.x;
  float v[4];
  for (int k = 0; k < 4; ++k) {
    const int e = lane + 32 * k;
    const unsigned h = (static_cast<unsigned>(layer) * 2654435761u) ^ (e * 40503u);
    // The logit is read (the route waits on the router) but the hash decides: the skeleton's
    // logits are not a model's.
    v[k] = static_cast<float>((h * 2246822519u) >> 8) + (__ldcg(logits + e) == 12345.f);
  }
  for (int pick = 0; pick < kTopK; ++pick) {
    float best = v[0];
    int where = lane;
    for (int k = 1; k < 4; ++k)
      if (v[k] > best) best = v[k], where = lane + 32 * k;
    for (int o = 16; o > 0; o >>= 1) {
      const float b = __shfl_xor_sync(0xffffffffu, best, o);
      const int w = __shfl_xor_sync(0xffffffffu, where, o);
      if (b > best || (b == best && w < where)) best = b, where = w;
    }
    if (lane == 0) picks[pick] = where;
    if (where % 32 == lane) v[where / 32] = -1.f;
  }
}

// This attention CTA's first key in the KV cache's [4 heads][1024 keys] rows: its KV head's
// (blockIdx.x / kAttnSplits) keys of its split (blockIdx.x % kAttnSplits).
__device__ size_t attention_first_key() {
  return static_cast<size_t>(blockIdx.x / kAttnSplits) * kContext +
         (blockIdx.x % kAttnSplits) * kSplitKeys;
}

// One (KV head, split) of decode attention done for real, with scalar FMAs: the group's 8 q
// heads against the split's 256 keys (a thread a key), a softmax a warp a head, then P V (a
// thread a dimension and half the keys). KV is [K | V] x [4 heads][1024 keys][128] bf16; the
// split's partial output (unnormalised by the other splits) goes to out [8][128].
__device__ float decode_attention(const uint4* kv, const float* q_src, float* xs, float* out) {
  const int head = blockIdx.x / kAttnSplits;
  float* q = xs;                                // [8][128]
  float* scores = xs + kGroup * kHeadDim;       // [8][256]
  float* upper = scores + kGroup * kSplitKeys;  // [8][128]: the second half's P V
  float* sums = upper + kGroup * kHeadDim;      // [8]
  for (int i = threadIdx.x; i < kGroup * kHeadDim; i += kThreads)
    q[i] = __ldcg(q_src + head * kGroup * kHeadDim + i);
  __syncthreads();
  const size_t first_key = attention_first_key();
  const uint4* k = kv + first_key * kHeadDim / 8;
  const uint16_t* v =
      reinterpret_cast<const uint16_t*>(kv + kKvBytes / kVec / 2) + first_key * kHeadDim;
  const int t = threadIdx.x;
  if (t < kSplitKeys) {
    float dots[kGroup] = {};
    for (int c = 0; c < kHeadDim / 8; ++c) {
      const uint4 w = load_streaming(k + t * (kHeadDim / 8) + c);
      const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float kj = __uint_as_float(j % 2 == 0 ? u[j / 2] << 16 : u[j / 2] & 0xffff0000u);
#pragma unroll
        for (int h = 0; h < kGroup; ++h) dots[h] = fmaf(kj, q[h * kHeadDim + c * 8 + j], dots[h]);
      }
    }
    for (int h = 0; h < kGroup; ++h) scores[h * kSplitKeys + t] = dots[h] * 0.08838835f;
  }
  __syncthreads();
  const int warp = t / 32, lane = t % 32;
  if (warp < kGroup) {
    float* row = scores + warp * kSplitKeys;
    float m = -INFINITY;
    for (int i = lane; i < kSplitKeys; i += 32) m = fmaxf(m, row[i]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float sum = 0;
    for (int i = lane; i < kSplitKeys; i += 32) {
      row[i] = __expf(row[i] - m);
      sum += row[i];
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) sums[warp] = sum;
  }
  __syncthreads();
  const int d = t % kHeadDim, half = t / kHeadDim;
  float acc[kGroup] = {};
  if (half < 2) {
    for (int key = half * kSplitKeys / 2; key < (half + 1) * kSplitKeys / 2; ++key) {
      const float vk = __uint_as_float(static_cast<uint32_t>(__ldcg(v + key * kHeadDim + d)) << 16);
#pragma unroll
      for (int h = 0; h < kGroup; ++h) acc[h] = fmaf(scores[h * kSplitKeys + key], vk, acc[h]);
    }
    if (half == 1)
      for (int h = 0; h < kGroup; ++h) upper[h * kHeadDim + d] = acc[h];
  }
  __syncthreads();
  float total = 0;
  if (half == 0) {
    for (int h = 0; h < kGroup; ++h) {
      const float o = (acc[h] + upper[h * kHeadDim + d]) / sums[h];
      out[h * kHeadDim + d] = o;
      total += o;
    }
  }
  return total;
}

// Asks L2 for this attention CTA's K and V lines (issued before its barrier).
__device__ void prefetch_kv(const uint4* kv) {
  const char* k = reinterpret_cast<const char*>(kv + attention_first_key() * kHeadDim / 8);
  const char* v = k + kKvBytes / 2;
  constexpr int kLines = kSplitKeys * kHeadDim * 2 / 128;
  for (int i = threadIdx.x; i < kLines; i += kThreads) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(k + i * 128));
    asm volatile("prefetch.global.L2 [%0];" ::"l"(v + i * 128));
  }
}

// The concatenation of the eight picked experts' matrices (`piece_vectors` each): this CTA's
// share of it, as one or two streams (split where it crosses from one expert to the next).
__device__ void expert_streams(const uint4* base, size_t piece_vectors, const int* picks, Stream& a,
                               Stream& b) {
  const Range all = share_of(piece_vectors * kTopK, blockIdx.x, gridDim.x);
  const size_t slot = all.begin / piece_vectors;
  const size_t split = min_of(all.end, (slot + 1) * piece_vectors);
  // w + j for j in the concatenated range addresses expert picks[slot]'s row.
  a.w = base + picks[slot] * piece_vectors - slot * piece_vectors;
  a.range = {all.begin, split};
  b.range = {split, all.end};
  b.w = split < all.end ? base + picks[slot + 1] * piece_vectors - (slot + 1) * piece_vectors : a.w;
}

__device__ void write_share(float* out, int n, float v) {
  const int i = blockIdx.x * 16 + threadIdx.x;
  if (threadIdx.x < 16 && i < n) out[i] = v;
}

__global__ void __launch_bounds__(kThreads, 1) layers_kernel(const __grid_constant__ Params p) {
  extern __shared__ __align__(1024) uint8_t smem[];
  float* xs = reinterpret_cast<float*>(smem);
  uint4* router_row = reinterpret_cast<uint4*>(smem + kXFloats * sizeof(float));
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem + kRegionOffset - 64);
  uint4* region = reinterpret_cast<uint4*>(smem + kRegionOffset);
  __shared__ float scratch[kThreads / 32];
  __shared__ int picks[kTopK];

  const Schedule s = p.schedule;
  const bool sync = s != kStreamOnly;
  const bool early = s >= kRegisters;      // first loads before the barrier
  const bool o_in_smem = s >= kQkvInSmem;  // o and the router rows bulk-loaded
  BulkLoad region_load{bars};
  BulkLoad router_load{bars + 1};
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bars)));
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bars + 1)));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  unsigned target = 0;
  auto barrier = [&] {
    if (sync) grid_sync(p.arrived, target);
  };

  float acc = 0;
  const Range qkv_share = share_of(kQkvVectors, blockIdx.x, gridDim.x);
  const Range o_share = share_of(kOVectors, blockIdx.x, gridDim.x);
  const uint32_t qkv_bytes = (qkv_share.end - qkv_share.begin) * kVec;
  const uint32_t o_bytes = (o_share.end - o_share.begin) * kVec;
  const bool router_cta = blockIdx.x < kExperts;
  const bool attention_cta = blockIdx.x < kAttnCtas;
  if (s == kQkvInSmem) {
    region_load.start(qkv_bytes);
    region_load.copy(region, p.layers[0].qkv + qkv_share.begin, qkv_bytes);
  }
  Stream qkv{p.layers[0].qkv, qkv_share};
  if (early && s != kQkvInSmem) qkv.issue_first();

  for (int layer = 0; layer < kLayers; ++layer) {
    // CTA 0's clock at the start of one layer and after each phase's barrier.
    auto stamp = [&](int i) {
      if (layer == kStampLayer && blockIdx.x == 0 && threadIdx.x == 0) p.stamps[i] = global_ns();
    };
    stamp(0);
    if (layer == 1 && blockIdx.x == 0 && threadIdx.x == 0) {
      p.stamps[kSteadyFrom] = global_ns();
      p.stamps[kClockFrom] = clock64();
    }
    const LayerWeights& L = p.layers[layer];
    const LayerWeights& next = p.layers[(layer + 1) % kLayers];
    // 1. qkv, the residual add + RMSNorm folded in (its sum of squares).
    load_x(xs, p.hidden, kHidden);
    acc += block_sum(xs[threadIdx.x] * xs[threadIdx.x], scratch);
    if (s == kQkvInSmem) {
      region_load.wait();
      acc += smem_dot<kHidden / 8>(region, qkv_bytes / kVec, xs);
      __syncthreads();
    } else {
      acc += qkv.dot<kHidden / 8>(xs, early);
    }
    write_share(p.sink, gridDim.x, acc);
    if (o_in_smem) {
      region_load.start(o_bytes);
      region_load.copy(region, L.o + o_share.begin, o_bytes);
      if (router_cta) {
        router_load.start(kRouterRowVectors * kVec);
        router_load.copy(router_row, L.router + blockIdx.x * kRouterRowVectors,
                         kRouterRowVectors * kVec);
      }
    }
    const bool real_attention = p.attention_cycles < 0;
    Stream kv{L.kv, share_of(kKvBytes / kVec, blockIdx.x, kAttnCtas)};
    if (early && attention_cta) {
      if (real_attention) {
        prefetch_kv(L.kv);
      } else {
        kv.issue_first();
      }
    }
    barrier();
    stamp(1);

    // 2. Attention: the KV read and a stand-in for the chain of latencies around it.
    // The o projection's first loads: at once, or after the KV on the attention CTAs (whose
    // registers hold the KV's until then).
    Stream o{L.o, o_share};
    if (early && !o_in_smem && !attention_cta) o.issue_first();
    if (attention_cta && real_attention) {
      acc += decode_attention(L.kv, p.hidden, xs, p.partial + blockIdx.x * kGroup * kHeadDim);
      if (early && !o_in_smem) o.issue_first();
    } else if (attention_cta) {
      load_x(xs, p.hidden, kAttnWidth);
      acc += kv.dot<kAttnWidth / 8>(xs, early);
      if (early && !o_in_smem) o.issue_first();
      const long long t0 = clock64();
      while (sync && clock64() - t0 < p.attention_cycles) {
      }
      for (int i = threadIdx.x; i < kAttnWidth / kAttnSplits; i += kThreads)
        p.partial[blockIdx.x * (kAttnWidth / kAttnSplits) + i] = acc;
    }
    barrier();
    stamp(2);

    // 3. o projection, the splits merged in its prologue.
    for (int i = threadIdx.x; i < kAttnWidth; i += kThreads) {
      float m = 0;
      for (int k = 0; k < kAttnSplits; ++k) m += __ldcg(p.partial + k * kAttnWidth + i);
      xs[i] = m;
    }
    __syncthreads();
    if (o_in_smem) {
      region_load.wait();
      acc += smem_dot<kAttnWidth / 8>(region, o_bytes / kVec, xs);
      __syncthreads();
    } else {
      acc += o.dot<kAttnWidth / 8>(xs, early);
    }
    write_share(p.hidden, kHidden, acc);
    if (s == kQkvInSmem) {
      region_load.start(qkv_bytes);
      region_load.copy(region, next.qkv + qkv_share.begin, qkv_bytes);
    }
    Stream router{L.router, {blockIdx.x * kRouterRowVectors, (blockIdx.x + 1) * kRouterRowVectors}};
    if (early && !o_in_smem && router_cta) router.issue_first();
    barrier();
    stamp(3);

    // 4. Router, the second add + RMSNorm folded in.
    load_x(xs, p.hidden, kHidden);
    acc += block_sum(xs[threadIdx.x] * xs[threadIdx.x], scratch);
    if (router_cta) {
      float part;
      if (o_in_smem) {
        router_load.wait();
        part = smem_dot<kHidden / 8>(router_row, kRouterRowVectors, xs);
      } else {
        part = router.dot<kHidden / 8>(xs, early);
      }
      const float logit = block_sum(part, scratch);
      if (threadIdx.x == 0) p.logits[layer * kExperts + blockIdx.x] = logit;
    }
    barrier();
    stamp(4);

    // 5. Route, in every CTA (no barrier after it).
    route(p.logits + layer * kExperts, layer, picks);
    __syncthreads();
    stamp(5);
    Stream gate_up_a, gate_up_b, down_a, down_b;
    expert_streams(L.gate_up, kGateUpExpertVectors, picks, gate_up_a, gate_up_b);
    expert_streams(L.down, kDownExpertVectors, picks, down_a, down_b);
    const size_t down_a_n = down_a.range.end - down_a.range.begin;
    const size_t down_b_n = down_b.range.end - down_b.range.begin;
    const bool down_in_smem = s == kDownInSmem && down_a_n + down_b_n <= p.region_vectors;
    if (down_in_smem) {
      region_load.start((down_a_n + down_b_n) * kVec);
      region_load.copy(region, down_a.w + down_a.range.begin, down_a_n * kVec);
      if (down_b_n > 0)
        region_load.copy(region + down_a_n, down_b.w + down_b.range.begin, down_b_n * kVec);
    }

    // 6. Experts' gate/up.
    load_x(xs, p.hidden, kHidden);
    acc += gate_up_a.dot<kHidden / 8>(xs, false);
    acc += gate_up_b.dot<kHidden / 8>(xs, false);
    write_share(p.act, kXFloats, acc);
    if (early && !down_in_smem) down_a.issue_first();
    barrier();
    stamp(6);

    // 7. Experts' down, weighted and summed.
    load_x(xs, p.act, kXFloats);
    if (down_in_smem) {
      region_load.wait();
      acc += smem_dot<kInter / 8>(region, down_a_n + down_b_n, xs);
      __syncthreads();
    } else {
      acc += down_a.dot<kInter / 8>(xs, early);
      acc += down_b.dot<kInter / 8>(xs, false);
    }
    write_share(p.hidden, kHidden, acc);
    qkv = Stream{next.qkv, qkv_share};
    if (early && s != kQkvInSmem) qkv.issue_first();
    barrier();
    stamp(7);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    p.stamps[kSteadyTo] = global_ns();
    p.stamps[kClockTo] = clock64();
  }
  region_load.wait();
  write_share(p.sink, gridDim.x, acc);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 2;
  int sms = 0, clock_khz = 0;
  BENCH_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  BENCH_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreate(&stream));

  // Each layer's dense weights and KV, and all 128 experts (so the picks land all over ~58 GB).
  const size_t dense_vectors =
      kQkvVectors + kOVectors + kExperts * kRouterRowVectors + kKvBytes / kVec;
  const size_t expert_vectors = kExperts * (kGateUpExpertVectors + kDownExpertVectors);
  const size_t layer_vectors = dense_vectors + expert_vectors;
  uint4* weights;
  BENCH_CUDA(cudaMalloc(&weights, layer_vectors * kLayers * kVec));
  BENCH_CUDA(cudaMemset(weights, 0x3c, layer_vectors * kLayers * kVec));
  std::vector<LayerWeights> host(kLayers);
  for (int l = 0; l < kLayers; ++l) {
    const uint4* at = weights + layer_vectors * l;
    host[l].qkv = at;
    host[l].o = host[l].qkv + kQkvVectors;
    host[l].router = host[l].o + kOVectors;
    host[l].kv = host[l].router + kExperts * kRouterRowVectors;
    host[l].gate_up = host[l].kv + kKvBytes / kVec;
    host[l].down = host[l].gate_up + kExperts * kGateUpExpertVectors;
  }
  LayerWeights* layers;
  BENCH_CUDA(cudaMalloc(&layers, sizeof(LayerWeights) * kLayers));
  BENCH_CUDA(
      cudaMemcpy(layers, host.data(), sizeof(LayerWeights) * kLayers, cudaMemcpyHostToDevice));
  float* scratch;
  const size_t scratch_floats =
      kAttnWidth + kAttnSplits * kAttnWidth + kLayers * kExperts + kXFloats + sms;
  BENCH_CUDA(cudaMalloc(&scratch, scratch_floats * sizeof(float)));
  BENCH_CUDA(cudaMemset(scratch, 0, scratch_floats * sizeof(float)));
  unsigned* arrived;
  BENCH_CUDA(cudaMalloc(&arrived, sizeof(unsigned)));
  unsigned long long* stamps;
  BENCH_CUDA(cudaMalloc(&stamps, sizeof(unsigned long long) * kStamps));

  // The copy floor, as sgl-bench measures it: 2 x bytes over a device-to-device copy's time.
  const size_t copy_bytes = size_t{2} << 30;
  cudaEvent_t start, stop;
  BENCH_CUDA(cudaEventCreate(&start));
  BENCH_CUDA(cudaEventCreate(&stop));
  float best_copy_ms = 1e9f;
  for (int i = 0; i < 6; ++i) {
    BENCH_CUDA(cudaEventRecord(start, stream));
    BENCH_CUDA(cudaMemcpyAsync(weights, reinterpret_cast<const char*>(weights) + copy_bytes,
                               copy_bytes, cudaMemcpyDeviceToDevice, stream));
    BENCH_CUDA(cudaEventRecord(stop, stream));
    BENCH_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
    best_copy_ms = std::min(best_copy_ms, ms);
  }
  BENCH_CUDA(cudaMemset(weights, 0x3c, 2 * copy_bytes));
  const double copy_bytes_per_us = 2.0 * copy_bytes / (best_copy_ms * 1e3);
  const double layer_bytes =
      static_cast<double>(kQkvVectors + kOVectors + kExperts * kRouterRowVectors + kKvBytes / kVec +
                          kTopK * (kGateUpExpertVectors + kDownExpertVectors)) *
      kVec;
  const double floor_us = layer_bytes / copy_bytes_per_us;
  std::printf("%d SMs at %d MHz; copy floor %.0f GB/s; %.1f MB a layer: floor %.2f us a layer\n",
              sms, clock_khz / 1000, copy_bytes_per_us / 1e3, layer_bytes / 1e6, floor_us);

  BENCH_CUDA(cudaFuncSetAttribute(layers_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(kSmemBytes)));
  int per_sm = 0;
  BENCH_CUDA(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, layers_kernel, kThreads, kSmemBytes));
  if (per_sm < 1) {
    std::fprintf(stderr, "the kernel does not fit an SM\n");
    return 1;
  }
  const size_t region_vectors = (kSmemBytes - kRegionOffset) / kVec;
  const size_t qkv_share = (kQkvVectors + sms - 1) / sms;
  const size_t o_share = (kOVectors + sms - 1) / sms;
  const size_t down_share = (kTopK * kDownExpertVectors + sms - 1) / sms;
  std::printf("weight region %zu KB a CTA (qkv share %zu KB, o %zu KB, down %zu KB)\n",
              region_vectors * kVec / 1024, qkv_share * kVec / 1024, o_share * kVec / 1024,
              down_share * kVec / 1024);
  // Where a share does not fit this GPU's region the schedule is not run (a smaller GPU).
  const bool fits[] = {true, true, true, o_share <= region_vectors && qkv_share <= region_vectors,
                       o_share <= region_vectors && down_share <= region_vectors};
  for (int sched = kStreamOnly; sched <= kDownInSmem; ++sched)
    if (!fits[sched])
      std::printf("%s: its shares do not fit the region; not run\n", kScheduleNames[sched]);

  const long long attention_ns[] = {-1, 0, 2000, 4000};  // -1: done for real
  // "us a layer": layers 1-47 by CTA 0's clock (the first layer, with qkv-smem's prologue,
  // and the launch left out); "launch": the launches' event time over 48 layers.
  std::printf("%-10s %9s %6s %11s %9s %7s   us a phase in layer %d (CTA 0):", "schedule", "attn ns",
              "MHz", "us a layer", "of floor", "launch", kStampLayer);
  for (const char* name : kPhaseNames) std::printf(" %s", name);
  std::printf("\n");
  for (int r = 0; r < rounds; ++r) {
    for (long long ns : attention_ns) {
      for (int sched = kStreamOnly; sched <= kDownInSmem; ++sched) {
        if (!fits[sched]) continue;
        Params params{
            layers,
            scratch,
            scratch + kAttnWidth,
            scratch + kAttnWidth + kAttnSplits * kAttnWidth,
            scratch + kAttnWidth + kAttnSplits * kAttnWidth + kLayers * kExperts,
            scratch + kAttnWidth + kAttnSplits * kAttnWidth + kLayers * kExperts + kXFloats,
            arrived,
            stamps,
            static_cast<Schedule>(sched),
            ns < 0 ? -1 : ns * clock_khz / 1000000,
            region_vectors};
        float total_ms = 0;
        double steady_us = 0;
        constexpr int kLaunches = 5;
        unsigned long long t[kStamps];
        for (int launch = 0; launch <= kLaunches; ++launch) {
          BENCH_CUDA(cudaMemsetAsync(arrived, 0, sizeof(unsigned), stream));
          BENCH_CUDA(cudaEventRecord(start, stream));
          // Cooperative: the grid barrier needs every CTA resident; a launch that cannot have
          // them all fails instead of spinning forever.
          void* args[] = {&params};
          BENCH_CUDA(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(layers_kernel),
                                                 dim3(sms), dim3(kThreads), args, kSmemBytes,
                                                 stream));
          BENCH_CUDA(cudaEventRecord(stop, stream));
          BENCH_CUDA(cudaEventSynchronize(stop));
          float ms = 0;
          BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
          BENCH_CUDA(cudaMemcpy(t, stamps, sizeof t, cudaMemcpyDeviceToHost));
          if (launch == 0) continue;  // the first launch warms up
          total_ms += ms;
          steady_us += (t[kSteadyTo] - t[kSteadyFrom]) / 1e3 / (kLayers - 1);
        }
        const double us = steady_us / kLaunches;
        const double launch_us = total_ms * 1e3 / kLaunches / kLayers;
        const double mhz = static_cast<double>(t[kClockTo] - t[kClockFrom]) * 1e3 /
                           static_cast<double>(t[kSteadyTo] - t[kSteadyFrom]);
        char attention[16];
        std::snprintf(attention, sizeof attention, ns < 0 ? "real" : "%lld", ns);
        std::printf("%-10s %9s %6.0f %11.2f %8.1f%% %7.2f  ", kScheduleNames[sched], attention, mhz,
                    us, 100.0 * floor_us / us, launch_us);
        for (int i = 0; i < kPhases; ++i) std::printf(" %5.2f", (t[i + 1] - t[i]) / 1e3);
        std::printf("\n");
      }
    }
  }
  BENCH_CUDA(cudaFree(weights));
  BENCH_CUDA(cudaFree(layers));
  BENCH_CUDA(cudaFree(scratch));
  BENCH_CUDA(cudaFree(arrived));
  BENCH_CUDA(cudaFree(stamps));
  return 0;
}
