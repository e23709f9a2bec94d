// Whether address translation costs a decode step's weight phases. A MoE step at batch 1 reads
// a few MB from each of many places spread over the whole model (eight of 128 experts a layer,
// ~60 GB of weights), so most phases may start on pages the TLBs no longer hold. Each kernel here
// streams one phase (`pieces` equal pieces, ~33 CTAs a piece as the expert GEMVs split them) from
// offsets drawn in a window of the buffer: a small window keeps the translations warm, the whole
// buffer makes them cold. `touch` has each kernel first read one word per `stride` of the phase
// `ahead` kernels later, so that its translations are walked early at the cost of a few loads.
// Prints microseconds per phase over a CUDA graph of kPhases kernels.
// Measured numbers: docs/perf-log/2026-12-07-tlb.md.
//   cmake --build --preset cuda --target tlb_bench && build/cuda/bench/tlb_bench [GiB]
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "cuda_bench.cuh"

namespace {

constexpr int kThreads = 512;
constexpr int kPhases = 960;  // 48 layers x 20: enough pages to pass any TLB's reach
constexpr int kMaxPieces = 8;
constexpr int kInFlight = 8;  // uint4 loads a thread keeps in flight, as the GEMVs do

struct Phase {
  const uint4* piece[kMaxPieces];
  const uint4* touch[kMaxPieces];  // the pieces of the phase `ahead` kernels on (or null)
};

__global__ void __launch_bounds__(kThreads)
    phase_kernel(Phase phase, int pieces, size_t piece_vectors, int ctas_per_piece,
                 size_t touch_stride_vectors, int touches_per_piece, unsigned* sink) {
  unsigned fold = 0;
  // Touches first: one word per stride of the later phase, spread over the grid's threads.
  const int touches = phase.touch[0] == nullptr ? 0 : pieces * touches_per_piece;
  const int g = blockIdx.x * kThreads + threadIdx.x;
  if (g < touches) {
    const uint4* p = phase.touch[g / touches_per_piece] +
                     static_cast<size_t>(g % touches_per_piece) * touch_stride_vectors;
    fold ^= __ldcg(reinterpret_cast<const unsigned*>(p));
  }
  const int piece = blockIdx.x / ctas_per_piece;
  const int part = blockIdx.x % ctas_per_piece;
  const size_t share = (piece_vectors + ctas_per_piece - 1) / ctas_per_piece;
  const size_t begin = part * share;
  const size_t end = begin + share < piece_vectors ? begin + share : piece_vectors;
  const uint4* w = phase.piece[piece];
  for (size_t i = begin + threadIdx.x; i < end; i += kInFlight * kThreads) {
    uint4 v[kInFlight];
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      const size_t j = i + static_cast<size_t>(k) * kThreads;
      v[k] = j < end ? load_streaming(w + j) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) fold ^= v[k].x ^ v[k].w;
  }
  if (fold == 0x9e3779b9u) atomicAdd(sink, 1u);  // keeps the loads; never true for the fill
}

struct Shape {
  const char* name;
  int pieces;
  size_t piece_bytes;
};

struct Placement {
  const char* name;
  size_t window_bytes;  // offsets drawn from the buffer's first window_bytes
  int ahead;            // 0: no touches
  size_t stride_bytes;
};

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb3fe1a85ec53ull;
  return x ^ (x >> 33);
}

float time_phases(const Shape& shape, const Placement& placement, const uint4* buffer, int sms,
                  unsigned* sink, cudaStream_t stream) {
  const size_t slots = placement.window_bytes / shape.piece_bytes;
  const size_t piece_vectors = shape.piece_bytes / sizeof(uint4);
  auto piece_at = [&](int phase, int piece) {
    const size_t slot = mix(static_cast<uint64_t>(phase) * kMaxPieces + piece) % slots;
    return buffer + slot * piece_vectors;
  };
  const int ctas_per_piece = (2 * sms + shape.pieces - 1) / shape.pieces;
  const size_t stride_vectors = placement.stride_bytes / sizeof(uint4);
  const int touches_per_piece =
      placement.ahead == 0 ? 0
                           : static_cast<int>((shape.piece_bytes + placement.stride_bytes - 1) /
                                              placement.stride_bytes);
  cudaGraph_t graph;
  BENCH_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < kPhases; ++k) {
    Phase phase = {};
    for (int p = 0; p < shape.pieces; ++p) {
      phase.piece[p] = piece_at(k, p);
      if (placement.ahead > 0) phase.touch[p] = piece_at((k + placement.ahead) % kPhases, p);
    }
    phase_kernel<<<shape.pieces * ctas_per_piece, kThreads, 0, stream>>>(
        phase, shape.pieces, piece_vectors, ctas_per_piece, stride_vectors, touches_per_piece,
        sink);
    BENCH_CUDA(cudaGetLastError());
  }
  BENCH_CUDA(cudaStreamEndCapture(stream, &graph));
  return graph_replay_ms(graph, stream, /*warmups=*/1, /*replays=*/4) * 1000.f / kPhases;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t gib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 40;
  constexpr size_t kMiB = size_t{1} << 20;
  const size_t buffer_bytes = gib << 30;
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreate(&stream));
  int sms = 0;
  BENCH_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  uint4* buffer;
  unsigned* sink;
  BENCH_CUDA(cudaMalloc(&buffer, buffer_bytes));
  BENCH_CUDA(cudaMemset(buffer, 1, buffer_bytes));
  BENCH_CUDA(cudaMalloc(&sink, sizeof(unsigned)));
  const Shape shapes[] = {
      {"8 x 6 MiB (gate/up)", 8, 6 * kMiB},
      {"8 x 3 MiB (down)", 8, 3 * kMiB},
      {"1 x 16 MiB (o proj)", 1, 16 * kMiB},
      {"1 x 48 MiB", 1, 48 * kMiB},
  };
  const Placement placements[] = {
      {"window 256 MiB", 256 * kMiB, 0, 0},
      {"window 1 GiB", 1024 * kMiB, 0, 0},
      {"window 4 GiB", 4096 * kMiB, 0, 0},
      {"window 16 GiB", 16384 * kMiB, 0, 0},
      {"whole buffer", buffer_bytes, 0, 0},
      {"whole, touch +1 / 2 MiB", buffer_bytes, 1, 2 * kMiB},
      {"whole, touch +1 / 64 KiB", buffer_bytes, 1, 64 * 1024},
      {"whole, touch +2 / 2 MiB", buffer_bytes, 2, 2 * kMiB},
      {"whole, touch +4 / 2 MiB", buffer_bytes, 4, 2 * kMiB},
  };
  std::printf("%d SMs, a %zu GiB buffer; us per phase in a graph of %d (two rounds)\n", sms, gib,
              kPhases);
  for (const Shape& shape : shapes) {
    const double mb = static_cast<double>(shape.pieces * shape.piece_bytes) / 1e6;
    std::printf("%s (%.1f MB)\n", shape.name, mb);
    for (const Placement& placement : placements) {
      if (placement.window_bytes > buffer_bytes) continue;
      const float a = time_phases(shape, placement, buffer, sms, sink, stream);
      const float b = time_phases(shape, placement, buffer, sms, sink, stream);
      std::printf("  %-28s %8.2f %8.2f us  (%.0f GB/s)\n", placement.name, a, b, mb / b * 1e3);
    }
  }
  BENCH_CUDA(cudaFree(buffer));
  BENCH_CUDA(cudaFree(sink));
  return 0;
}
