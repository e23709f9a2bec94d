// The multi-node bootstrap on the CPU: --dist-init-addr parsing, the node layout's checks, and
// the id exchange over TCP on the loopback (a server thread, two client threads, a fake 128-byte
// id), including a client that starts before the server and one that gives up.
#include "distributed/bootstrap.h"

#include <gtest/gtest.h>

#include <thread>

#include "distributed/nccl_communicator.h"

namespace sgl::distributed {
namespace {

using namespace std::chrono_literals;

TEST(BootstrapTest, ParsesHostPort) {
  auto a = parse_dist_init_addr("10.0.0.1:50000");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->host, "10.0.0.1");
  EXPECT_EQ(a->port, 50000);
  auto b = parse_dist_init_addr("sgl-dev-0:29500");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "sgl-dev-0");
  auto c = parse_dist_init_addr("[::1]:1234");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->to_string(), "[::1]:1234");
  EXPECT_EQ(a->to_string(), "10.0.0.1:50000");
}

TEST(BootstrapTest, MalformedAddressesAreClearErrors) {
  for (const char* bad : {"", "host", "host:", ":5000", "host:0", "host:65536", "host:12ab",
                          "::1:5000", "[::1]5000", "[::1", "a b:80", "host:-1"}) {
    auto a = parse_dist_init_addr(bad);
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_NE(a.status().message().find("--dist-init-addr"), std::string::npos)
        << a.status().to_string();
    EXPECT_NE(a.status().message().find("HOST:PORT"), std::string::npos);
  }
  EXPECT_TRUE(parse_dist_init_addr("127.0.0.1:0", /*allow_port_zero=*/true).ok());
}

TEST(BootstrapTest, NodeLayoutChecks) {
  EXPECT_TRUE(check_multi_node({}).ok());
  EXPECT_TRUE(check_single_node({}, "sgl-generate").ok());
  const Status rank = check_multi_node({.nnodes = 2, .node_rank = 2});
  EXPECT_NE(rank.message().find("--node-rank 2 is not in [0, --nnodes 2)"), std::string::npos)
      << rank.to_string();
  const Status one = check_multi_node({.nnodes = 1, .node_rank = 1});
  EXPECT_FALSE(one.ok());
  const Status zero = check_multi_node({.nnodes = 0});
  EXPECT_NE(zero.message().find("--nnodes must be >= 1"), std::string::npos);
  const Status addr = check_multi_node({.nnodes = 2, .node_rank = 1});
  EXPECT_NE(addr.message().find("needs --dist-init-addr"), std::string::npos) << addr.to_string();
  MultiNode two{.nnodes = 2, .node_rank = 0, .dist_init_addr = DistInitAddr{"127.0.0.1", 5000}};
  EXPECT_TRUE(check_multi_node(two).ok());
  const Status multi = check_single_node(two, "sgl-generate");
  EXPECT_EQ(multi.code(), StatusCode::kUnimplemented);
  EXPECT_NE(multi.message().find("--nnodes 2: sgl-generate runs on one node; sgl-server serves"),
            std::string::npos)
      << multi.to_string();
  EXPECT_EQ(multi.message().find('\n'), std::string::npos);  // one line
}

std::vector<uint8_t> fake_id() {
  std::vector<uint8_t> id(128);
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<uint8_t>(i * 37 + 11);
  return id;
}

TEST(BootstrapTest, TwoNodesFetchTheIdNodeZeroServes) {
  auto server = IdServer::start({"127.0.0.1", 0}, fake_id(), 2);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  const DistInitAddr addr{"127.0.0.1", (*server)->port()};
  ASSERT_NE(addr.port, 0);
  std::vector<std::vector<uint8_t>> got(2);
  std::vector<std::thread> nodes;
  for (int n = 0; n < 2; ++n) {
    nodes.emplace_back([&, n] {
      auto id = fetch_id(addr, 10s);
      ASSERT_TRUE(id.ok()) << id.status().to_string();
      got[static_cast<size_t>(n)] = *id;
    });
  }
  for (auto& t : nodes) t.join();
  EXPECT_TRUE((*server)->wait(10s).ok());
  EXPECT_EQ(got[0], fake_id());
  EXPECT_EQ(got[1], fake_id());
}

TEST(BootstrapTest, ClientRetriesUntilTheServerStarts) {
  // Find a free port, then let the client try it before anyone listens.
  uint16_t port = 0;
  {
    auto probe = IdServer::start({"127.0.0.1", 0}, {}, 0);
    ASSERT_TRUE(probe.ok());
    port = (*probe)->port();
  }
  std::vector<uint8_t> got;
  std::thread client([&] {
    auto id = fetch_id({"127.0.0.1", port}, 10s);
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    got = *id;
  });
  std::this_thread::sleep_for(300ms);
  auto server = IdServer::start({"127.0.0.1", port}, fake_id(), 1);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  client.join();
  EXPECT_TRUE((*server)->wait(10s).ok());
  EXPECT_EQ(got, fake_id());
}

TEST(BootstrapTest, TimeoutsAreClearErrors) {
  uint16_t port = 0;
  {
    auto probe = IdServer::start({"127.0.0.1", 0}, {}, 0);
    ASSERT_TRUE(probe.ok());
    port = (*probe)->port();
  }
  auto none = fetch_id({"127.0.0.1", port}, 300ms);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no NCCL id from --dist-init-addr 127.0.0.1:"),
            std::string::npos)
      << none.status().to_string();
  auto server = IdServer::start({"127.0.0.1", 0}, fake_id(), 1);
  ASSERT_TRUE(server.ok());
  const Status waited = (*server)->wait(200ms);
  EXPECT_NE(waited.message().find("0 of 1 nodes fetched the NCCL id"), std::string::npos)
      << waited.to_string();
}

// Without NCCL (the CPU build), the factories say why instead of failing later.
TEST(BootstrapTest, NcclFactoriesSayWhyWhenNotBuilt) {
  if (nccl_available()) GTEST_SKIP() << "this build has NCCL (the cuda tests cover it)";
  auto id = nccl_unique_id();
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(id.status().message().find("NCCL"), std::string::npos);
  auto group = nccl_group({0});
  EXPECT_FALSE(group.ok());
}

}  // namespace
}  // namespace sgl::distributed
