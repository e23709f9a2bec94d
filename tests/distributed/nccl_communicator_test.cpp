// The NCCL communicator on CUDA. One rank on one GPU (what a one-GPU machine can check): every
// collective is the identity, in f32 and bf16, through both ways of making a group, and inside a
// captured CUDA graph; NVLink multicast is kept off. Several ranks (skipped, saying so, where
// fewer GPUs exist; NCCL allows no two ranks of one communicator on one GPU): every collective
// against its definition computed on the host, the same bits on every rank, at 2 and 4 ranks.
#include "distributed/nccl_communicator.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "backend/stream.h"
#include "core/half.h"

namespace sgl::distributed {
namespace {

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

// A device buffer of `bytes` on the current device.
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) { EXPECT_EQ(cudaMalloc(&ptr, n), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(ptr); }
  Tensor as(DType dtype, int64_t numel, int device) const {
    return Tensor(ptr, dtype, {numel}, Device::cuda(device));
  }
};

backend::Stream stream_of(cudaStream_t s, int device) {
  backend::Stream out;
  out.device = Device::cuda(device);
  out.native = s;
  return out;
}

template <typename T>
std::vector<T> download(const DeviceBuffer& b, int64_t n, cudaStream_t s) {
  std::vector<T> out(static_cast<size_t>(n));
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(out.data(), b.ptr, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

template <typename T>
void upload(const DeviceBuffer& b, const std::vector<T>& v) {
  EXPECT_EQ(cudaMemcpy(b.ptr, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
}

float value(int r, int64_t i) {
  std::mt19937 rng(static_cast<uint32_t>(r) * 104729u + static_cast<uint32_t>(i));
  return std::uniform_real_distribution<float>(-4.f, 4.f)(rng);
}

// fn(rank, communicator, stream) on one thread per rank, each on its GPU.
void on_ranks(std::vector<std::unique_ptr<Communicator>>& comms,
              const std::function<void(int, Communicator&, cudaStream_t)>& fn) {
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      const int device = nccl_device(*comms[r]);
      ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
      cudaStream_t s = nullptr;
      ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
      fn(static_cast<int>(r), *comms[r], s);
      EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      cudaStreamDestroy(s);
    });
  }
  for (auto& t : threads) t.join();
}

// Every collective at `size` ranks against the host's definition; results equal on every rank.
void check_collectives(std::vector<std::unique_ptr<Communicator>>& comms) {
  const int size = static_cast<int>(comms.size());
  constexpr int64_t n = 4099;    // odd: no chunk is a round size
  const int64_t a2a = 6 * size;  // elements, a multiple of the ranks
  std::vector<std::vector<float>> sum(size), mx(size), gathered(size), exchanged(size), bcast(size);
  std::vector<std::vector<uint16_t>> sum_bf16(size);
  on_ranks(comms, [&](int r, Communicator& comm, cudaStream_t s) {
    EXPECT_EQ(comm.rank(), r);
    EXPECT_EQ(comm.size(), size);
    const int dev = nccl_device(comm);
    const backend::Stream stream = stream_of(s, dev);
    std::vector<float> mine(n);
    for (int64_t i = 0; i < n; ++i) mine[i] = value(r, i);
    DeviceBuffer buf(n * sizeof(float)), out(size * n * sizeof(float));
    upload(buf, mine);
    comm.all_reduce(buf.as(DType::kF32, n, dev), ReduceOp::kSum, stream);
    sum[r] = download<float>(buf, n, s);
    upload(buf, mine);
    comm.all_reduce(buf.as(DType::kF32, n, dev), ReduceOp::kMax, stream);
    mx[r] = download<float>(buf, n, s);
    std::vector<uint16_t> mine_bf16(n);
    for (int64_t i = 0; i < n; ++i) mine_bf16[i] = float_to_bf16(mine[i]);
    upload(buf, mine_bf16);
    comm.all_reduce(buf.as(DType::kBF16, n, dev), ReduceOp::kSum, stream);
    sum_bf16[r] = download<uint16_t>(buf, n, s);
    upload(buf, mine);
    comm.all_gather(buf.as(DType::kF32, n, dev), out.as(DType::kF32, size * n, dev), stream);
    gathered[r] = download<float>(out, size * n, s);
    std::vector<float> send(a2a);
    for (int64_t i = 0; i < a2a; ++i) send[i] = static_cast<float>(1000 * r + i);
    DeviceBuffer in2(a2a * sizeof(float)), out2(a2a * sizeof(float));
    upload(in2, send);
    comm.all_to_all(in2.as(DType::kF32, a2a, dev), out2.as(DType::kF32, a2a, dev), stream);
    exchanged[r] = download<float>(out2, a2a, s);
    upload(buf, mine);
    comm.broadcast(buf.as(DType::kF32, n, dev), size - 1, stream);
    bcast[r] = download<float>(buf, n, s);
    comm.barrier();
  });
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(sum[r], sum[0]) << "rank " << r << " sum bits differ from rank 0";
    EXPECT_EQ(sum_bf16[r], sum_bf16[0]) << "rank " << r << " bf16 sum bits differ from rank 0";
    for (int64_t i = 0; i < n; ++i) {
      float s = 0, m = -1e30f, sb = 0;
      for (int q = 0; q < size; ++q) {
        s += value(q, i);
        m = std::max(m, value(q, i));
        sb += bf16_to_float(float_to_bf16(value(q, i)));
      }
      ASSERT_NEAR(sum[r][i], s, 1e-5f * size) << "sum rank " << r << " element " << i;
      ASSERT_EQ(mx[r][i], m) << "max rank " << r << " element " << i;
      // NCCL sums bf16 in bf16 (a rounding per step).
      ASSERT_NEAR(bf16_to_float(sum_bf16[r][i]), sb, 0.02f * size + 0.01f * std::abs(sb));
      for (int q = 0; q < size; ++q) ASSERT_EQ(gathered[r][q * n + i], value(q, i));
      ASSERT_EQ(bcast[r][i], value(size - 1, i));
    }
    const int64_t chunk = a2a / size;
    for (int q = 0; q < size; ++q) {
      for (int64_t j = 0; j < chunk; ++j) {
        // Chunk q came from rank q: its chunk r.
        ASSERT_EQ(exchanged[r][q * chunk + j], static_cast<float>(1000 * q + r * chunk + j));
      }
    }
  }
}

TEST(NcclCommunicatorTest, Built) { EXPECT_TRUE(nccl_available()) << nccl_unavailable_reason(); }

TEST(NcclCommunicatorTest, OneRankIsTheIdentity) {
  if (device_count() < 1) GTEST_SKIP() << "no GPU";
  auto group = nccl_group({0});
  ASSERT_TRUE(group.ok()) << group.status().to_string();
  check_collectives(*group);
}

TEST(NcclCommunicatorTest, OneRankFromAUniqueId) {
  if (device_count() < 1) GTEST_SKIP() << "no GPU";
  auto id = nccl_unique_id();
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  auto comm = nccl_communicator(*id, 0, 1, 0);
  ASSERT_TRUE(comm.ok()) << comm.status().to_string();
  std::vector<std::unique_ptr<Communicator>> comms;
  comms.push_back(std::move(comm).value());
  check_collectives(comms);
}

// Whatever the environment says, NVLink multicast is off when NCCL makes a communicator. (NCCL
// reads the variable once, at its first use in the process: this checks what the factories set,
// not what NCCL cached. One rank here: NCCL would not use multicast on one GPU anyway.)
TEST(NcclCommunicatorTest, NvlinkMulticastStaysOff) {
  if (device_count() < 1) GTEST_SKIP() << "no GPU";
  setenv("NCCL_NVLS_ENABLE", "1", 1);
  ASSERT_TRUE(nccl_group({0}).ok());
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
  setenv("NCCL_NVLS_ENABLE", "1", 1);
  auto id = nccl_unique_id();
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
  ASSERT_TRUE(nccl_communicator(*id, 0, 1, 0).ok());
}

TEST(NcclCommunicatorTest, TwoRanksOnOneGpuAreRefused) {
  auto group = nccl_group({0, 0});
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.status().message().find("one GPU per rank"), std::string::npos)
      << group.status().to_string();
}

TEST(NcclCommunicatorTest, WrongDeviceTensorsAbortClearly) {
  if (device_count() < 1) GTEST_SKIP() << "no GPU";
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // NCCL runs threads of its own
  auto group = nccl_group({0});
  ASSERT_TRUE(group.ok());
  std::vector<float> host(4);
  const Tensor t(host.data(), DType::kF32, {4});
  EXPECT_DEATH((*group)[0]->all_reduce(t, ReduceOp::kSum, backend::Stream::cpu()),
               "takes contiguous tensors on cuda:0");
}

// The decode graphs hold the collectives: one rank's all-reduce and all-gather, captured on a
// stream and replayed, do what they do eagerly.
TEST(NcclCommunicatorTest, CollectivesAreCapturedInCudaGraphs) {
  if (device_count() < 1) GTEST_SKIP() << "no GPU";
  auto group = nccl_group({0});
  ASSERT_TRUE(group.ok());
  Communicator& comm = *(*group)[0];
  CUDA_OK(cudaSetDevice(0));
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const backend::Stream stream = stream_of(s, 0);
  constexpr int64_t n = 8192;
  DeviceBuffer buf(n * sizeof(uint16_t)), out(n * sizeof(uint16_t));
  std::vector<uint16_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = float_to_bf16(value(3, i));
  upload(buf, v);
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  comm.all_reduce(buf.as(DType::kBF16, n, 0), ReduceOp::kSum, stream);
  comm.all_gather(buf.as(DType::kBF16, n, 0), out.as(DType::kBF16, n, 0), stream);
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; ++i) CUDA_OK(cudaGraphLaunch(exec, s));
  EXPECT_EQ(download<uint16_t>(out, n, s), v);
  EXPECT_EQ(download<uint16_t>(buf, n, s), v);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

class NcclRanks : public ::testing::TestWithParam<int> {};

TEST_P(NcclRanks, CollectivesMatchTheirDefinitionOnEveryRank) {
  const int size = GetParam();
  if (device_count() < size) {
    GTEST_SKIP() << size << " ranks need " << size << " GPUs, found " << device_count();
  }
  std::vector<int> devices;
  for (int r = 0; r < size; ++r) devices.push_back(r);
  auto group = nccl_group(devices);
  ASSERT_TRUE(group.ok()) << group.status().to_string();
  check_collectives(*group);
}

// The multi-node way: one id, each rank joining from its own thread.
TEST_P(NcclRanks, RanksJoinByUniqueId) {
  const int size = GetParam();
  if (device_count() < size) {
    GTEST_SKIP() << size << " ranks need " << size << " GPUs, found " << device_count();
  }
  auto id = nccl_unique_id();
  ASSERT_TRUE(id.ok());
  std::vector<std::unique_ptr<Communicator>> comms(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      auto comm = nccl_communicator(*id, r, size, r);
      ASSERT_TRUE(comm.ok()) << comm.status().to_string();
      comms[static_cast<size_t>(r)] = std::move(comm).value();
    });
  }
  for (auto& t : threads) t.join();
  check_collectives(comms);
}

INSTANTIATE_TEST_SUITE_P(Sizes, NcclRanks, ::testing::Values(2, 4, 8));

}  // namespace
}  // namespace sgl::distributed
