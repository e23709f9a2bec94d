// The custom all-reduce (PeerAllReduce, through the communicators nccl_group makes) at 2, 4 and 8
// GPUs (skipped, saying so, where fewer exist): sums of f32 and bf16 buffers from 16 bytes to
// its limit (one-shot and two-shot), called over and over with changing sizes (its inboxes
// alternate and are reused), equal the rank-order f32 sum rounded once, bit for bit, on every rank;
// replays of a captured graph keep that; larger or unaligned sums still reach NCCL; the fused
// all-reduce + residual add + RMSNorm equals the all-reduce then the norm kernel, bit for bit;
// abort() releases ranks waiting for a peer that never calls; one GPU, or a GPU twice, is
// refused.
#include "distributed/peer_all_reduce.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/half.h"
#include "distributed/nccl_communicator.h"
#include "kernels/rms_norm.h"

namespace sgl::distributed {
namespace {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

// A value of random sign, 24 random mantissa bits and a magnitude from 2^-7 to 8, from a hash of
// (rank, i, call): cheap for the millions the checks draw, and inexact to add, so that only the
// rank-order sum matches bit for bit.
float value(int rank, int64_t i, int call) {
  uint64_t x = (static_cast<uint64_t>(rank) << 48) ^ (static_cast<uint64_t>(call) << 32) ^
               static_cast<uint64_t>(i);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  const float mantissa = static_cast<float>(x & 0xffffff) / 16777216.f;  // [0, 1)
  const int exponent = static_cast<int>((x >> 24) % 11) - 6;
  return std::ldexp((x >> 40 & 1) ? -mantissa : mantissa, exponent);
}

// Rank r's values for one call, as stored in `dtype` (f32 or bf16 bits), and their rank-order f32
// sum over `ranks` as the kernel rounds it.
std::vector<uint32_t> stored(int r, int64_t n, int call, DType dtype) {
  std::vector<uint32_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float v = value(r, i, call);
    uint32_t bits = 0;
    std::memcpy(&bits, &v, 4);
    out[static_cast<size_t>(i)] = dtype == DType::kF32 ? bits : float_to_bf16(v);
  }
  return out;
}
float as_float(uint32_t bits, DType dtype) {
  if (dtype == DType::kBF16) return bf16_to_float(static_cast<uint16_t>(bits));
  float f = 0;
  std::memcpy(&f, &bits, 4);
  return f;
}
// What the kernel sends for a stored value: data that looks like an empty inbox slot (bf16 -0.0,
// the f32 word 0x80008000) becomes a zero of the same magnitude (+0.0, -0.0).
uint32_t sendable(uint32_t bits, DType dtype) {
  if (dtype == DType::kBF16) return bits == 0x8000u ? 0u : bits;
  return bits == 0x80008000u ? 0x80000000u : bits;
}

// The rank-order f32 sum of every rank's stored values, rounded once to the dtype.
std::vector<uint32_t> sum_of(const std::vector<std::vector<uint32_t>>& inputs, DType dtype) {
  const size_t n = inputs[0].size();
  std::vector<float> acc(n, 0.f);
  for (const auto& v : inputs) {
    for (size_t i = 0; i < n; ++i) acc[i] += as_float(sendable(v[i], dtype), dtype);
  }
  std::vector<uint32_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &acc[i], 4);
    out[i] = dtype == DType::kF32 ? bits : float_to_bf16(acc[i]);
  }
  return out;
}

std::vector<uint32_t> expected_sum(int ranks, int64_t n, int call, DType dtype) {
  std::vector<std::vector<uint32_t>> inputs;
  for (int r = 0; r < ranks; ++r) inputs.push_back(stored(r, n, call, dtype));
  return sum_of(inputs, dtype);
}

// Host <-> device in the dtype's width.
void upload(void* dst, const std::vector<uint32_t>& v, DType dtype, cudaStream_t s) {
  if (dtype == DType::kF32) {
    ASSERT_EQ(cudaMemcpyAsync(dst, v.data(), v.size() * 4, cudaMemcpyHostToDevice, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    return;
  }
  std::vector<uint16_t> h(v.begin(), v.end());
  ASSERT_EQ(cudaMemcpyAsync(dst, h.data(), h.size() * 2, cudaMemcpyHostToDevice, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
}
std::vector<uint32_t> download(const void* src, int64_t n, DType dtype, cudaStream_t s) {
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  if (dtype == DType::kF32) {
    std::vector<uint32_t> out(static_cast<size_t>(n));
    EXPECT_EQ(cudaMemcpy(out.data(), src, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
  std::vector<uint16_t> h(static_cast<size_t>(n));
  EXPECT_EQ(cudaMemcpy(h.data(), src, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  return {h.begin(), h.end()};
}

struct RankStream {
  void* buffer = nullptr;
  cudaStream_t stream = nullptr;
  backend::Stream of(int device) const {
    backend::Stream s;
    s.device = Device::cuda(device);
    s.native = stream;
    return s;
  }
};

// fn(rank, communicator, its buffer and stream) on a thread per rank.
template <typename Fn>
void on_ranks(std::vector<std::unique_ptr<Communicator>>& comms, size_t buffer_bytes, Fn fn) {
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      const int device = nccl_device(*comms[r]);
      ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
      RankStream rs;
      ASSERT_EQ(cudaStreamCreateWithFlags(&rs.stream, cudaStreamNonBlocking), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&rs.buffer, buffer_bytes), cudaSuccess);
      fn(static_cast<int>(r), *comms[r], device, rs);
      EXPECT_EQ(cudaStreamSynchronize(rs.stream), cudaSuccess);
      cudaFree(rs.buffer);
      cudaStreamDestroy(rs.stream);
    });
  }
  for (auto& t : threads) t.join();
}

class PeerRanks : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (device_count() < GetParam()) {
      GTEST_SKIP() << GetParam() << " ranks need " << GetParam() << " GPUs, found "
                   << device_count();
    }
    std::vector<int> devices;
    for (int r = 0; r < GetParam(); ++r) devices.push_back(r);
    auto made = PeerAllReduce::create(devices);
    ASSERT_TRUE(made.ok()) << made.status().to_string();  // H100 / H200 boards have NVLink
    peer_ = std::move(made).value();
    auto group = nccl_group(devices, /*custom_all_reduce=*/true);
    ASSERT_TRUE(group.ok()) << group.status().to_string();
    comms_ = std::move(group).value();
  }
  std::shared_ptr<PeerAllReduce> peer_;  // what the communicators' own one takes, for applies()
  std::vector<std::unique_ptr<Communicator>> comms_;
};

TEST_P(PeerRanks, SumsEqualTheRankOrderSumOnEveryRank) {
  const int ranks = GetParam();
  const int64_t max = PeerAllReduce::kDefaultMaxBytes;
  // Bytes, one-shot and two-shot (past 256 KB, or 512 KB at two ranks; chunks that do not divide
  // evenly), in an order that keeps changing which slots each call fills.
  const std::vector<int64_t> sizes = {16, max,        16 * 1024,       4096 + 16,      256 * 1024,
                                      32, 512 * 1024, 512 * 1024 + 16, (1 << 20) + 48, max - 16};
  constexpr int kRounds = 4;
  std::vector<std::vector<std::vector<uint32_t>>> got(static_cast<size_t>(ranks));
  on_ranks(comms_, max, [&](int r, Communicator& comm, int device, RankStream& rs) {
    int call = 0;
    for (int round = 0; round < kRounds; ++round) {
      for (DType dtype : {DType::kBF16, DType::kF32}) {
        for (int64_t bytes : sizes) {
          const int64_t n = bytes / static_cast<int64_t>(dtype_size(dtype));
          upload(rs.buffer, stored(r, n, call, dtype), dtype, rs.stream);
          comm.all_reduce(Tensor(rs.buffer, dtype, {n}, Device::cuda(device)), ReduceOp::kSum,
                          rs.of(device));
          got[static_cast<size_t>(r)].push_back(download(rs.buffer, n, dtype, rs.stream));
          ++call;
        }
      }
    }
  });
  int call = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (DType dtype : {DType::kBF16, DType::kF32}) {
      for (int64_t bytes : sizes) {
        const int64_t n = bytes / static_cast<int64_t>(dtype_size(dtype));
        const std::vector<uint32_t> want = expected_sum(ranks, n, call, dtype);
        for (int r = 0; r < ranks; ++r) {
          ASSERT_EQ(got[static_cast<size_t>(r)][static_cast<size_t>(call)], want)
              << "rank " << r << ", call " << call << ": " << bytes << " bytes of "
              << dtype_name(dtype);
        }
        ++call;
      }
    }
  }
}

TEST_P(PeerRanks, GraphReplaysKeepTheSums) {
  const int ranks = GetParam();
  const int64_t n = 8192;  // bf16: 16 KB, a decode step's hidden state at batch 1 (Llama-70B)
  constexpr int kReplays = 50;
  std::vector<std::vector<std::vector<uint32_t>>> got(static_cast<size_t>(ranks));
  on_ranks(comms_, n * 2, [&](int r, Communicator& comm, int device, RankStream& rs) {
    const Tensor t(rs.buffer, DType::kBF16, {n}, Device::cuda(device));
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(rs.stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    comm.all_reduce(t, ReduceOp::kSum, rs.of(device));
    ASSERT_EQ(cudaStreamEndCapture(rs.stream, &graph), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int k = 0; k < kReplays; ++k) {
      upload(rs.buffer, stored(r, n, k, DType::kBF16), DType::kBF16, rs.stream);
      ASSERT_EQ(cudaGraphLaunch(exec, rs.stream), cudaSuccess);
      got[static_cast<size_t>(r)].push_back(download(rs.buffer, n, DType::kBF16, rs.stream));
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  });
  for (int k = 0; k < kReplays; ++k) {
    const std::vector<uint32_t> want = expected_sum(ranks, n, k, DType::kBF16);
    for (int r = 0; r < ranks; ++r) {
      ASSERT_EQ(got[static_cast<size_t>(r)][static_cast<size_t>(k)], want)
          << "rank " << r << ", replay " << k;
    }
  }
}

// Forty sums queued back to back, eagerly and in one graph (replayed), alternating a one-shot
// buffer and a two-shot one, no host sync between: every call reads what the one before wrote,
// so each buffer ends as its first sum times ranks^19 (bf16: every partial sum exact in f32).
TEST_P(PeerRanks, BackToBackCallsKeepTheSums) {
  const int ranks = GetParam();
  const int64_t small = 8192, large = ((1 << 20) + 48) / 2;  // bf16 elements
  constexpr int kPairs = 20;
  std::vector<std::vector<std::vector<uint32_t>>> got(static_cast<size_t>(ranks));
  on_ranks(comms_, (small + large) * 2, [&](int r, Communicator& comm, int device, RankStream& rs) {
    auto* base = static_cast<uint16_t*>(rs.buffer);
    const Tensor a(base, DType::kBF16, {small}, Device::cuda(device));
    const Tensor b(base + small, DType::kBF16, {large}, Device::cuda(device));
    auto queue_all = [&] {
      for (int k = 0; k < kPairs; ++k) {
        comm.all_reduce(a, ReduceOp::kSum, rs.of(device));
        comm.all_reduce(b, ReduceOp::kSum, rs.of(device));
      }
    };
    auto reset = [&] {
      upload(base, stored(r, small, 0, DType::kBF16), DType::kBF16, rs.stream);
      upload(base + small, stored(r, large, 1, DType::kBF16), DType::kBF16, rs.stream);
    };
    reset();
    queue_all();
    got[static_cast<size_t>(r)].push_back(download(base, small + large, DType::kBF16, rs.stream));
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(rs.stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    queue_all();
    ASSERT_EQ(cudaStreamEndCapture(rs.stream, &graph), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int replay = 0; replay < 3; ++replay) {
      reset();
      ASSERT_EQ(cudaGraphLaunch(exec, rs.stream), cudaSuccess);
      got[static_cast<size_t>(r)].push_back(download(base, small + large, DType::kBF16, rs.stream));
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  });
  std::vector<uint32_t> want = expected_sum(ranks, small, 0, DType::kBF16);
  const std::vector<uint32_t> want_large = expected_sum(ranks, large, 1, DType::kBF16);
  want.insert(want.end(), want_large.begin(), want_large.end());
  const float scale = std::pow(static_cast<float>(ranks), kPairs - 1);
  for (uint32_t& bits : want) bits = float_to_bf16(as_float(bits, DType::kBF16) * scale);
  for (int r = 0; r < ranks; ++r) {
    ASSERT_EQ(got[static_cast<size_t>(r)].size(), 4u);
    for (size_t run = 0; run < 4; ++run) {
      ASSERT_EQ(got[static_cast<size_t>(r)][run], want)
          << "rank " << r << (run == 0 ? ", eager" : ", graph replay " + std::to_string(run));
    }
  }
}

// Inputs that look like an empty inbox slot (bf16 -0.0, the f32 word 0x80008000) on some ranks
// or all of them, one-shot and two-shot: the sums complete, as their zeros' sums.
TEST_P(PeerRanks, ValuesThatLookLikeEmptySlotsGoThrough) {
  const int ranks = GetParam();
  for (DType dtype : {DType::kBF16, DType::kF32}) {
    const uint32_t empty = dtype == DType::kBF16 ? 0x8000u : 0x80008000u;
    for (int64_t bytes : {int64_t{4096}, int64_t{(1 << 20) + 48}}) {
      const int64_t n = bytes / static_cast<int64_t>(dtype_size(dtype));
      std::vector<std::vector<uint32_t>> inputs;
      for (int r = 0; r < ranks; ++r) {
        std::vector<uint32_t> v = stored(r, n, 7, dtype);
        for (int64_t i = 0; i < n; ++i) {
          if (i % 3 == 0 || (i % 3 == 1 && r == 0)) v[static_cast<size_t>(i)] = empty;
        }
        inputs.push_back(std::move(v));
      }
      std::vector<std::vector<uint32_t>> got(static_cast<size_t>(ranks));
      on_ranks(comms_, bytes, [&](int r, Communicator& comm, int device, RankStream& rs) {
        upload(rs.buffer, inputs[static_cast<size_t>(r)], dtype, rs.stream);
        comm.all_reduce(Tensor(rs.buffer, dtype, {n}, Device::cuda(device)), ReduceOp::kSum,
                        rs.of(device));
        got[static_cast<size_t>(r)] = download(rs.buffer, n, dtype, rs.stream);
      });
      const std::vector<uint32_t> want = sum_of(inputs, dtype);
      for (int r = 0; r < ranks; ++r) {
        ASSERT_EQ(got[static_cast<size_t>(r)], want)
            << "rank " << r << ", " << bytes << " bytes of " << dtype_name(dtype);
      }
    }
  }
}

// Past the limit or an unaligned size (and max): not the kernel's, NCCL's answer.
TEST_P(PeerRanks, WhatItDoesNotTakeReachesNccl) {
  const int ranks = GetParam();
  const int64_t max = PeerAllReduce::kDefaultMaxBytes;
  const std::vector<int64_t> counts = {max / 4 + 4, 4099};  // f32 elements
  for (int64_t n : counts) {
    EXPECT_FALSE(
        peer_->applies(Tensor(nullptr, DType::kF32, {n}, Device::cuda(0)), ReduceOp::kSum));
  }
  EXPECT_FALSE(
      peer_->applies(Tensor(nullptr, DType::kF32, {1024}, Device::cuda(0)), ReduceOp::kMax));
  EXPECT_TRUE(
      peer_->applies(Tensor(nullptr, DType::kF32, {1024}, Device::cuda(0)), ReduceOp::kSum));
  std::vector<std::vector<std::vector<uint32_t>>> got(static_cast<size_t>(ranks));
  on_ranks(comms_, (max / 4 + 4) * 4, [&](int r, Communicator& comm, int device, RankStream& rs) {
    for (size_t c = 0; c < counts.size(); ++c) {
      upload(rs.buffer, stored(r, counts[c], static_cast<int>(c), DType::kF32), DType::kF32,
             rs.stream);
      comm.all_reduce(Tensor(rs.buffer, DType::kF32, {counts[c]}, Device::cuda(device)),
                      ReduceOp::kSum, rs.of(device));
      got[static_cast<size_t>(r)].push_back(download(rs.buffer, counts[c], DType::kF32, rs.stream));
    }
  });
  for (size_t c = 0; c < counts.size(); ++c) {
    const std::vector<uint32_t> want =
        expected_sum(ranks, counts[c], static_cast<int>(c), DType::kF32);
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(got[static_cast<size_t>(r)][c], got[0][c]) << "rank " << r << " differs";
      for (int64_t i = 0; i < counts[c]; ++i) {
        ASSERT_NEAR(as_float(got[static_cast<size_t>(r)][c][i], DType::kF32),
                    as_float(want[i], DType::kF32), 1e-5f * ranks)
            << "rank " << r << " element " << i;
      }
    }
  }
}

// all_reduce_add_rms_norm against all_reduce then kernels::fused_add_rms_norm on copies of the
// same inputs (x a rank's own, the residual and weight every rank's), bit for bit in x and the
// residual: rows of 8 to 24576 values (1 to 4 chunks a thread, widths not multiples of 64), 1 to
// 16 rows (the next kernel launched early up to 8), two fused calls back to back between plain
// sums, so the kinds of call share the inboxes and counters; where the fused kernel does not apply
// (more than 16 rows, past the one-shot limit) the communicator says so and the caller's two calls
// run.
TEST_P(PeerRanks, FusedAddRmsNormEqualsTheAllReduceThenTheNorm) {
  const int ranks = GetParam();
  struct Shape {
    int64_t rows, width;
  };
  const std::vector<Shape> shapes = {{1, 8192},  {3, 2048}, {1, 8},    {5, 2056},  {2, 24576},
                                     {16, 8192}, {9, 4096}, {17, 512}, {64, 4096}, {4, 5120}};
  constexpr float kEps = 1e-5f;
  struct Outcome {
    bool fused;
    std::vector<uint32_t> x, residual, x_ref, residual_ref;
  };
  std::vector<std::vector<Outcome>> got(static_cast<size_t>(ranks));
  const int64_t max_elems = 64 * 4096;  // the largest shape
  on_ranks(comms_, max_elems * 2, [&](int r, Communicator& comm, int device, RankStream& rs) {
    const Device dev = Device::cuda(device);
    void *x_ref = nullptr, *residual = nullptr, *residual_ref = nullptr, *weight = nullptr;
    ASSERT_EQ(cudaMalloc(&x_ref, max_elems * 2), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&residual, max_elems * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&residual_ref, max_elems * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&weight, 24576 * 2), cudaSuccess);
    int call = 0;
    for (const Shape& shape : shapes) {
      const int64_t n = shape.rows * shape.width;
      const std::vector<uint32_t> xs = stored(r, n, call, DType::kBF16);
      const std::vector<uint32_t> rs_in = stored(ranks, n, call, DType::kF32);  // every rank's
      upload(weight, stored(ranks + 1, shape.width, call, DType::kBF16), DType::kBF16, rs.stream);
      upload(rs.buffer, xs, DType::kBF16, rs.stream);
      upload(x_ref, xs, DType::kBF16, rs.stream);
      upload(residual, rs_in, DType::kF32, rs.stream);
      upload(residual_ref, rs_in, DType::kF32, rs.stream);
      const Tensor x(rs.buffer, DType::kBF16, {shape.rows, shape.width}, dev);
      const Tensor xr(x_ref, DType::kBF16, {shape.rows, shape.width}, dev);
      const Tensor res(residual, DType::kF32, {shape.rows, shape.width}, dev);
      const Tensor res_ref(residual_ref, DType::kF32, {shape.rows, shape.width}, dev);
      const Tensor w(weight, DType::kBF16, {shape.width}, dev);
      // Twice, back to back (the second sums the first's output), then the reference twice.
      Outcome o;
      for (int k = 0; k < 2; ++k) {
        o.fused = comm.all_reduce_add_rms_norm(x, res, w, kEps, rs.of(device));
        if (!o.fused) {
          comm.all_reduce(x, ReduceOp::kSum, rs.of(device));
          kernels::fused_add_rms_norm(x, res, w, kEps, rs.of(device));
        }
      }
      for (int k = 0; k < 2; ++k) {
        comm.all_reduce(xr, ReduceOp::kSum, rs.of(device));
        kernels::fused_add_rms_norm(xr, res_ref, w, kEps, rs.of(device));
      }
      o.x = download(rs.buffer, n, DType::kBF16, rs.stream);
      o.residual = download(residual, n, DType::kF32, rs.stream);
      o.x_ref = download(x_ref, n, DType::kBF16, rs.stream);
      o.residual_ref = download(residual_ref, n, DType::kF32, rs.stream);
      got[static_cast<size_t>(r)].push_back(std::move(o));
      ++call;
    }
    cudaFree(x_ref);
    cudaFree(residual);
    cudaFree(residual_ref);
    cudaFree(weight);
  });
  for (size_t c = 0; c < shapes.size(); ++c) {
    const Shape& shape = shapes[c];
    const int64_t one_shot =
        ranks == 2 ? PeerAllReduce::kOneShotBytesTwoRanks : PeerAllReduce::kOneShotBytes;
    const bool fits = shape.rows <= 16 && shape.rows * shape.width * 2 <= one_shot;
    for (int r = 0; r < ranks; ++r) {
      const Outcome& o = got[static_cast<size_t>(r)][c];
      const std::string what = "rank " + std::to_string(r) + ", " + std::to_string(shape.rows) +
                               " x " + std::to_string(shape.width);
      EXPECT_EQ(o.fused, fits) << what;
      ASSERT_EQ(o.x, o.x_ref) << what;
      ASSERT_EQ(o.residual, o.residual_ref) << what;
      ASSERT_EQ(o.x, got[0][c].x) << what << " differs from rank 0";
    }
  }
}

// A rank that never calls leaves the others' kernels waiting for its packs (checked: their
// streams are still busy after 200 ms) until abort() releases them: one-shot, two-shot and the
// fused all-reduce + RMSNorm (its 16 KB as one row of 8192); or until the group is destroyed,
// which releases them too and waits for them before freeing the memory they use. (Each on a
// group of its own: an abort ends a group.)
TEST_P(PeerRanks, AbortReleasesRanksWaitingForAPeer) {
  const int n = GetParam();
  std::vector<int> devices;
  for (int r = 0; r < n; ++r) devices.push_back(r);
  struct Call {
    int64_t bytes;
    bool fused, destroy;
  };
  for (const auto [bytes, fused, destroy] :
       {Call{16 << 10, false, false}, Call{2 << 20, false, false}, Call{16 << 10, true, false},
        Call{16 << 10, false, true}}) {
    auto made = PeerAllReduce::create(devices);
    ASSERT_TRUE(made.ok()) << made.status().to_string();
    std::shared_ptr<PeerAllReduce> group = std::move(made).value();
    std::vector<cudaStream_t> streams(static_cast<size_t>(n - 1));
    std::vector<void*> buffers(static_cast<size_t>(n - 1));
    for (int r = 0; r + 1 < n; ++r) {  // the last rank never calls
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      ASSERT_EQ(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking), cudaSuccess);
      // x (bf16), then the f32 residual and the bf16 weight of the fused call's one row.
      ASSERT_EQ(cudaMalloc(&buffers[r], 4 * bytes), cudaSuccess);
      ASSERT_EQ(cudaMemset(buffers[r], 0, 4 * bytes), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      backend::Stream stream;
      stream.device = Device::cuda(r);
      stream.native = streams[r];
      auto* base = static_cast<uint8_t*>(buffers[r]);
      if (fused) {
        const int64_t d = bytes / 2;
        const Tensor x(base, DType::kBF16, {1, d}, Device::cuda(r));
        const Tensor residual(base + bytes, DType::kF32, {1, d}, Device::cuda(r));
        const Tensor weight(base + 3 * bytes, DType::kBF16, {d}, Device::cuda(r));
        ASSERT_TRUE(group->applies_add_rms_norm(x, residual, weight));
        group->all_reduce_add_rms_norm(r, x, residual, weight, 1e-5f, stream);
      } else {
        group->all_reduce(r, Tensor(base, DType::kBF16, {bytes / 2}, Device::cuda(r)), stream);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (int r = 0; r + 1 < n; ++r) {
      EXPECT_EQ(cudaStreamQuery(streams[r]), cudaErrorNotReady)
          << "rank " << r << " finished a " << bytes << "-byte sum without its peer"
          << (fused ? " (fused)" : "");
    }
    if (destroy) {
      group.reset();  // returns once the ranks' kernels are done
      for (int r = 0; r + 1 < n; ++r) {
        EXPECT_EQ(cudaStreamQuery(streams[r]), cudaSuccess) << "rank " << r << " after destroy";
      }
    } else {
      EXPECT_FALSE(group->aborted());
      group->abort();
      EXPECT_TRUE(group->aborted());
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (int r = 0; r + 1 < n; ++r) {
      cudaError_t state = cudaStreamQuery(streams[r]);
      while (state == cudaErrorNotReady && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        state = cudaStreamQuery(streams[r]);
      }
      if (state == cudaErrorNotReady) {
        ADD_FAILURE() << "rank " << r << " still waits 20 s after abort (" << bytes << " bytes)";
        std::_Exit(1);  // its kernel would keep the process from exiting
      }
      EXPECT_EQ(state, cudaSuccess) << "rank " << r;
      cudaFree(buffers[r]);
      cudaStreamDestroy(streams[r]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, PeerRanks, ::testing::Values(2, 4, 8));

TEST(PeerAllReduce, RefusesOneRankAndARepeatedGpu) {
  EXPECT_FALSE(PeerAllReduce::create({0}).ok());
  const auto twice = PeerAllReduce::create({0, 0});
  EXPECT_FALSE(twice.ok());
}

}  // namespace
}  // namespace sgl::distributed
