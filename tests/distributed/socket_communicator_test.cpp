// The socket communicator (ranks joined over TCP through rank 0; here each rank a thread, as
// each would be a process): every collective gives the shared-memory group's bits on every rank,
// over a script of back-to-back collectives of varied sizes, dtypes and roots, in groups of 1
// to 4; a group that cannot form fails with a clear error, in time.
#include "distributed/socket_communicator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include "core/half.h"
#include "distributed/shared_memory_communicator.h"

namespace sgl::distributed {
namespace {

constexpr auto kJoinTimeout = std::chrono::seconds(20);

DistInitAddr loopback(uint16_t port) { return {"127.0.0.1", port}; }

// Each rank's outputs, appended byte for byte.
using Outputs = std::vector<std::vector<char>>;

void append(std::vector<char>& out, const void* data, size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  out.insert(out.end(), p, p + bytes);
}

// A script of collectives; every rank's inputs from a seeded generator.
void run_script(Communicator& c, std::vector<char>& out) {
  const backend::Stream cpu = backend::Stream::cpu();
  std::mt19937 rng(1234u + static_cast<uint32_t>(c.rank()));
  std::uniform_real_distribution<float> uniform(-3.f, 3.f);
  for (int round = 0; round < 40; ++round) {
    const int64_t n = 1 + round * 37 % 301;
    std::vector<float> f(static_cast<size_t>(n));
    for (float& x : f) x = uniform(rng);
    c.all_reduce(Tensor(f.data(), DType::kF32, {n}),
                 round % 3 == 0 ? ReduceOp::kMax : ReduceOp::kSum, cpu);
    append(out, f.data(), f.size() * sizeof(float));

    std::vector<uint16_t> h(static_cast<size_t>(n));
    for (uint16_t& x : h) x = float_to_bf16(uniform(rng));
    c.all_reduce(Tensor(h.data(), DType::kBF16, {n}), ReduceOp::kSum, cpu);
    append(out, h.data(), h.size() * sizeof(uint16_t));

    std::vector<int32_t> in(static_cast<size_t>(n)), gathered(static_cast<size_t>(n * c.size()));
    for (int32_t& x : in) x = static_cast<int32_t>(rng());
    c.all_gather(Tensor(in.data(), DType::kI32, {n}),
                 Tensor(gathered.data(), DType::kI32, {n * c.size()}), cpu);
    append(out, gathered.data(), gathered.size() * sizeof(int32_t));

    const int64_t m = n * c.size();
    std::vector<float> send(static_cast<size_t>(m)), recv(static_cast<size_t>(m));
    for (float& x : send) x = uniform(rng);
    c.all_to_all(Tensor(send.data(), DType::kF32, {m}), Tensor(recv.data(), DType::kF32, {m}), cpu);
    append(out, recv.data(), recv.size() * sizeof(float));

    std::vector<float> b(static_cast<size_t>(n));
    for (float& x : b) x = uniform(rng);
    c.broadcast(Tensor(b.data(), DType::kF32, {n}), round % c.size(), cpu);
    append(out, b.data(), b.size() * sizeof(float));
    if (round % 7 == 0) c.barrier();
  }
}

// run_script on `size` threads, one rank each, through `make(rank)`'s communicator.
Outputs on_ranks(int size, const std::function<std::unique_ptr<Communicator>(int)>& make) {
  Outputs outputs(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Communicator> c = make(r);
      ASSERT_NE(c, nullptr);
      EXPECT_EQ(c->rank(), r);
      EXPECT_EQ(c->size(), size);
      run_script(*c, outputs[static_cast<size_t>(r)]);
    });
  }
  for (auto& t : threads) t.join();
  return outputs;
}

class SocketRanks : public ::testing::TestWithParam<int> {};

TEST_P(SocketRanks, GiveTheSharedMemoryGroupsBitsOnEveryRank) {
  const int size = GetParam();
  SharedMemoryGroup group(size);
  const Outputs expected = on_ranks(size, [&](int r) { return group.communicator(r); });

  // Rank 0 listens on an ephemeral port first; the others join it there.
  Result<std::unique_ptr<SocketCommunicator>> root = SocketCommunicator::listen(loopback(0), size);
  ASSERT_TRUE(root.ok()) << root.status().message();
  std::unique_ptr<SocketCommunicator> root_comm = std::move(root).value();
  const uint16_t port = root_comm->port();
  const Outputs got = on_ranks(size, [&](int r) -> std::unique_ptr<Communicator> {
    if (r == 0) {
      const Status joined = root_comm->join_listening(kJoinTimeout);
      EXPECT_TRUE(joined.ok()) << joined.message();
      return joined.ok() ? std::move(root_comm) : nullptr;
    }
    Result<std::unique_ptr<SocketCommunicator>> c =
        SocketCommunicator::join(loopback(port), r, size, kJoinTimeout);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  });
  ASSERT_EQ(got.size(), expected.size());
  for (int r = 0; r < size; ++r) {
    ASSERT_FALSE(expected[static_cast<size_t>(r)].empty());
    EXPECT_TRUE(got[static_cast<size_t>(r)] == expected[static_cast<size_t>(r)])
        << "rank " << r << " differs from the shared-memory group";
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, SocketRanks, ::testing::Values(1, 2, 3, 4));

TEST(SocketCommunicator, NobodyListeningIsAnErrorInTime) {
  // A port that was free a moment ago: bind one, learn it, close it.
  uint16_t port = 0;
  { ASSERT_TRUE(listen_at(loopback(0), &port).ok()); }
  const auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<SocketCommunicator>> c =
      SocketCommunicator::join(loopback(port), 1, 2, std::chrono::milliseconds(300));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cannot connect"), std::string::npos) << c.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(SocketCommunicator, AnUnreachableHostIsAnErrorInTime) {
  // TEST-NET-1 (RFC 5737): routed nowhere, so a connect either fails at once or never answers;
  // either way the join ends near its deadline, not after the kernel's SYN retries.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(
      SocketCommunicator::join({"192.0.2.1", 9}, 1, 2, std::chrono::milliseconds(300)).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(SocketCommunicator, RanksMissingOrDisagreeingOnTheSizeAreErrors) {
  {  // nobody joins rank 0
    Result<std::unique_ptr<SocketCommunicator>> c =
        SocketCommunicator::join(loopback(0), 0, 3, std::chrono::milliseconds(200));
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find("0 of 2 ranks joined"), std::string::npos)
        << c.status().message();
  }
  Result<std::unique_ptr<SocketCommunicator>> root = SocketCommunicator::listen(loopback(0), 2);
  ASSERT_TRUE(root.ok());
  const uint16_t port = root.value()->port();
  std::thread other([port] {
    // Joins a group of 3: rank 0 refuses it, so this side times out waiting for the group.
    EXPECT_FALSE(
        SocketCommunicator::join(loopback(port), 1, 3, std::chrono::milliseconds(2000)).ok());
  });
  const Status joined = root.value()->join_listening(std::chrono::seconds(10));
  other.join();
  ASSERT_FALSE(joined.ok());
  EXPECT_NE(joined.message().find("joined a group of 3 ranks; rank 0's has 2"), std::string::npos)
      << joined.message();
  EXPECT_FALSE(SocketCommunicator::join(loopback(1), 2, 2, kJoinTimeout).ok());  // rank >= size
}

}  // namespace
}  // namespace sgl::distributed
