// The shared-memory communicator with ranks as threads: each collective against its definition
// computed serially, bit-identical results on every rank (reductions in rank order), bf16,
// thousands of back-to-back collectives (the reusable barrier), groups of 1 to 5 ranks.
#include "distributed/shared_memory_communicator.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <thread>

#include "core/half.h"

namespace sgl::distributed {
namespace {

// Runs fn(communicator) on `size` threads, one rank each.
void on_ranks(int size, const std::function<void(Communicator&)>& fn) {
  SharedMemoryGroup group(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&group, &fn, r] {
      std::unique_ptr<Communicator> comm = group.communicator(r);
      fn(*comm);
    });
  }
  for (auto& t : threads) t.join();
}

// Rank r's input element i.
float value(int r, int64_t i, uint32_t seed) {
  std::mt19937 rng(seed * 7919u + static_cast<uint32_t>(r) * 104729u + static_cast<uint32_t>(i));
  return std::uniform_real_distribution<float>(-4.f, 4.f)(rng);
}

class Ranks : public ::testing::TestWithParam<int> {};

TEST_P(Ranks, AllReduceSumsInRankOrderOnEveryRank) {
  const int size = GetParam();
  constexpr int64_t n = 1001;
  std::vector<float> expected_sum(n), expected_max(n);
  for (int64_t i = 0; i < n; ++i) {
    float s = value(0, i, 1), m = value(0, i, 1);
    for (int r = 1; r < size; ++r) {
      s += value(r, i, 1);
      m = std::max(m, value(r, i, 1));
    }
    expected_sum[i] = s;
    expected_max[i] = m;
  }
  on_ranks(size, [&](Communicator& c) {
    std::vector<float> sum(n), max(n);
    for (int64_t i = 0; i < n; ++i) sum[i] = max[i] = value(c.rank(), i, 1);
    c.all_reduce(Tensor(sum.data(), DType::kF32, {n}), ReduceOp::kSum, backend::Stream::cpu());
    c.all_reduce(Tensor(max.data(), DType::kF32, {n}), ReduceOp::kMax, backend::Stream::cpu());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(sum[i], expected_sum[i]) << "rank " << c.rank() << " element " << i;  // exact
      ASSERT_EQ(max[i], expected_max[i]);
    }
  });
}

TEST_P(Ranks, AllReduceBf16RoundsTheF32SumOnce) {
  const int size = GetParam();
  constexpr int64_t n = 257;
  on_ranks(size, [&](Communicator& c) {
    std::vector<uint16_t> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = float_to_bf16(value(c.rank(), i, 2));
    c.all_reduce(Tensor(x.data(), DType::kBF16, {n}), ReduceOp::kSum, backend::Stream::cpu());
    for (int64_t i = 0; i < n; ++i) {
      float s = 0.f;
      for (int r = 0; r < size; ++r) s += bf16_to_float(float_to_bf16(value(r, i, 2)));
      ASSERT_EQ(x[i], float_to_bf16(s)) << "rank " << c.rank() << " element " << i;
    }
  });
}

TEST_P(Ranks, AllGatherAllToAllAndBroadcast) {
  const int size = GetParam();
  constexpr int64_t n = 6;  // elements per rank (gather) or per chunk (all-to-all)
  on_ranks(size, [&](Communicator& c) {
    const int me = c.rank();
    std::vector<int32_t> in(n), out(n * size);
    for (int64_t i = 0; i < n; ++i) in[i] = me * 100 + static_cast<int32_t>(i);
    c.all_gather(Tensor(in.data(), DType::kI32, {n}), Tensor(out.data(), DType::kI32, {n * size}),
                 backend::Stream::cpu());
    for (int r = 0; r < size; ++r) {
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[r * n + i], r * 100 + i);
    }
    // all_to_all: rank me sends chunk j = {me, j, i} to rank j.
    std::vector<int32_t> send(n * size), recv(n * size);
    for (int j = 0; j < size; ++j) {
      for (int64_t i = 0; i < n; ++i)
        send[j * n + i] = me * 10000 + j * 100 + static_cast<int32_t>(i);
    }
    c.all_to_all(Tensor(send.data(), DType::kI32, {n * size}),
                 Tensor(recv.data(), DType::kI32, {n * size}), backend::Stream::cpu());
    for (int r = 0; r < size; ++r) {
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(recv[r * n + i], r * 10000 + me * 100 + i);
    }
    for (int root = 0; root < size; ++root) {
      std::vector<float> b(n, static_cast<float>(me));
      c.broadcast(Tensor(b.data(), DType::kF32, {n}), root, backend::Stream::cpu());
      for (float v : b) ASSERT_EQ(v, static_cast<float>(root));
    }
  });
}

TEST_P(Ranks, ThousandsOfBackToBackCollectives) {
  const int size = GetParam();
  on_ranks(size, [&](Communicator& c) {
    float x = 0.f;
    for (int step = 0; step < 3000; ++step) {
      x = static_cast<float>(c.rank() + step);
      c.all_reduce(Tensor(&x, DType::kF32, {1}), ReduceOp::kSum, backend::Stream::cpu());
      const float expected = static_cast<float>(size * step + size * (size - 1) / 2);
      ASSERT_EQ(x, expected) << "step " << step;
      if (step % 100 == 0) c.barrier();
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Sizes, Ranks, ::testing::Values(1, 2, 3, 4, 5));

}  // namespace
}  // namespace sgl::distributed
