// Where --dp-size replicas run and what memory each may take: the static fraction is split so
// that the replicas together take what one engine would; a bad replica count is refused.
#include "engine/data_parallel_launch.h"

#include <gtest/gtest.h>

namespace sgl::engine {
namespace {

runner::ModelRunnerOptions on(Device device, double fraction = 0) {
  runner::ModelRunnerOptions o;
  o.device = device;
  o.mem_fraction_static = fraction;
  return o;
}

TEST(DataParallelLaunch, OneReplicaKeepsItsOptions) {
  const auto o =
      replica_runner_options(on(Device::cuda(1), 0.5), 0, 1, ReplicaPlacement::kSharedDevice);
  EXPECT_EQ(o.device, Device::cuda(1));
  EXPECT_EQ(o.mem_fraction_static, 0.5);
}

TEST(DataParallelLaunch, CpuReplicasSplitTheFreeMemoryFraction) {
  EXPECT_EQ(place_replicas(Device::cpu(), 4), ReplicaPlacement::kOwnDevice);
  for (int i = 0; i < 4; ++i) {
    const auto o = replica_runner_options(on(Device::cpu()), i, 4, ReplicaPlacement::kOwnDevice);
    EXPECT_EQ(o.device, Device::cpu());
    EXPECT_DOUBLE_EQ(o.mem_fraction_static, 0.2 / 4);  // the CPU default, split
  }
  EXPECT_DOUBLE_EQ(
      replica_runner_options(on(Device::cpu(), 0.4), 1, 2, ReplicaPlacement::kOwnDevice)
          .mem_fraction_static,
      0.2);
}

TEST(DataParallelLaunch, ReplicasSharingAGpuTakeOneShareOfItsBudgetEach) {
  // Replica i is sized after replicas 0 .. i-1 took theirs: total x fraction x (i + 1) / n minus
  // what is in use leaves each one share.
  for (int i = 0; i < 4; ++i) {
    const auto o =
        replica_runner_options(on(Device::cuda(0), 0.8), i, 4, ReplicaPlacement::kSharedDevice);
    EXPECT_EQ(o.device, Device::cuda(0));
    EXPECT_DOUBLE_EQ(o.mem_fraction_static, 0.2 * (i + 1));
  }
  EXPECT_DOUBLE_EQ(
      replica_runner_options(on(Device::cuda(0)), 0, 2, ReplicaPlacement::kSharedDevice)
          .mem_fraction_static,
      0.44);  // the GPU default, 0.88, halved
}

TEST(DataParallelLaunch, ReplicasWithTheirOwnGpusCountFromTheBaseGpu) {
  for (int i = 0; i < 3; ++i) {
    const auto o =
        replica_runner_options(on(Device::cuda(2), 0.7), i, 3, ReplicaPlacement::kOwnDevice);
    EXPECT_EQ(o.device, Device::cuda(2 + i));
    EXPECT_EQ(o.mem_fraction_static, 0.7);
  }
}

TEST(DataParallelLaunch, RefusesFewerThanOneReplica) {
  auto r = launch_data_parallel_engines("/nonexistent", on(Device::cpu()), EngineOptions{}, {}, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("--dp-size must be >= 1"), std::string::npos);
}

TEST(DataParallelLaunch, AReplicaThatFailsToLoadIsNamed) {
  auto r = launch_data_parallel_engines("/nonexistent", on(Device::cpu()), EngineOptions{}, {}, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("data-parallel replica 0 of 2"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace sgl::engine
