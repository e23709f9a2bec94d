// The link between node 0 and the other nodes (runner/node_link.h), over the loopback: the
// start, batches in order and the stop reach every follower; a follower whose flags differ, a
// node rank out of range or taken twice is refused with the reason on both ends; a follower
// learns when node 0 is gone, and node 0 when a follower is; joining ends at its deadline.
#include "runner/node_link.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "runner/exec_batch_wire.h"

namespace sgl::runner {
namespace {

using namespace std::chrono_literals;

const distributed::DistInitAddr kAny{"127.0.0.1", 0};

ExecBatch batch_with_id(int64_t id) {
  ExecBatch b;
  b.id = id;
  ExecRequest q;
  q.req_pool_idx = 3;
  q.extend_len = 2;
  q.input_ids = {5, static_cast<int32_t>(id)};
  b.requests.push_back(q);
  b.out_cache_loc = {10, 11};
  b.req_to_token_writes.add(3, 0, std::vector<int32_t>{10, 11});
  return b;
}

// Node 0 listening for `nnodes` - 1 followers of `layout`.
std::unique_ptr<LeaderLink> leader(const NodeLayout& layout) {
  auto link = LeaderLink::listen(kAny, layout);
  EXPECT_TRUE(link.ok()) << link.status().to_string();
  return link.ok() ? std::move(link).value() : nullptr;
}

TEST(NodeLinkTest, StartBatchesAndStopReachEveryFollower) {
  const NodeLayout layout{4, 2, 3};
  std::unique_ptr<LeaderLink> lead = leader(layout);
  ASSERT_NE(lead, nullptr);
  const distributed::DistInitAddr addr{"127.0.0.1", lead->port()};
  std::vector<std::vector<int64_t>> seen(3);
  std::vector<NodeStart> starts(3);
  std::vector<Status> ends(3);
  std::vector<std::thread> followers;
  for (int n = 1; n <= 2; ++n) {
    followers.emplace_back([&, n] {
      auto link = FollowerLink::join(addr, n, layout, 10s);
      if (!link.ok()) {
        ends[static_cast<size_t>(n)] = link.status();
        return;
      }
      auto start = (*link)->receive_start();
      if (!start.ok()) {
        ends[static_cast<size_t>(n)] = start.status();
        return;
      }
      starts[static_cast<size_t>(n)] = *start;
      for (;;) {
        auto batch = (*link)->receive_batch();
        if (!batch.ok()) {
          ends[static_cast<size_t>(n)] = batch.status();
          return;
        }
        if (!batch->has_value()) return;  // stop
        // Every field arrives: the batch re-encodes to the bytes node 0 sent.
        EXPECT_EQ(encode_exec_batch(**batch), encode_exec_batch(batch_with_id((*batch)->id)));
        seen[static_cast<size_t>(n)].push_back((*batch)->id);
      }
    });
  }
  ASSERT_TRUE(lead->accept(10s).ok());
  ASSERT_TRUE(lead->send_start({1000, 18, 512}).ok());
  for (int64_t id = 1; id <= 50; ++id) ASSERT_TRUE(lead->send_batch(batch_with_id(id)).ok());
  lead.reset();  // sends the stop
  for (std::thread& t : followers) t.join();
  std::vector<int64_t> expected;
  for (int64_t id = 1; id <= 50; ++id) expected.push_back(id);
  for (int n = 1; n <= 2; ++n) {
    EXPECT_TRUE(ends[static_cast<size_t>(n)].ok()) << ends[static_cast<size_t>(n)].to_string();
    EXPECT_EQ(seen[static_cast<size_t>(n)], expected) << "node " << n;
    EXPECT_EQ(starts[static_cast<size_t>(n)].num_kv_slots, 1000);
    EXPECT_EQ(starts[static_cast<size_t>(n)].req_to_token_rows, 18);
    EXPECT_EQ(starts[static_cast<size_t>(n)].context_len, 512);
  }
}

// A follower that does not fit is refused; `want` is in the message on both ends.
void expect_refused(const NodeLayout& ours, const NodeLayout& theirs, int32_t node_rank,
                    const std::string& want, bool first_joins_as_1 = false) {
  std::unique_ptr<LeaderLink> lead = leader(ours);
  ASSERT_NE(lead, nullptr);
  const distributed::DistInitAddr addr{"127.0.0.1", lead->port()};
  Status accepted;
  std::thread node0([&] { accepted = lead->accept(10s); });
  std::unique_ptr<FollowerLink> first;
  if (first_joins_as_1) {
    auto link = FollowerLink::join(addr, 1, ours, 10s);
    ASSERT_TRUE(link.ok()) << link.status().to_string();
    first = std::move(link).value();
  }
  auto refused = FollowerLink::join(addr, node_rank, theirs, 10s);
  node0.join();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("node 0 refused this node: " + want), std::string::npos)
      << refused.status().to_string();
  ASSERT_FALSE(accepted.ok());
  EXPECT_NE(accepted.message().find(want), std::string::npos) << accepted.to_string();
}

TEST(NodeLinkTest, AFollowerWithOtherFlagsIsRefusedWithTheReason) {
  expect_refused({4, 1, 2}, {2, 1, 2}, 1,
                 "node 1 runs with --tp-size 2 --ep-size 1 --nnodes 2; node 0 with --tp-size 4 "
                 "--ep-size 1 --nnodes 2");
  expect_refused({4, 2, 2}, {4, 1, 2}, 1, "node 1 runs with --tp-size 4 --ep-size 1");
}

TEST(NodeLinkTest, ANodeRankOutOfRangeOrTakenIsRefused) {
  expect_refused({4, 1, 3}, {4, 1, 3}, 3, "--node-rank 3 is not in [1, --nnodes 3)");
  expect_refused({4, 1, 3}, {4, 1, 3}, 1, "two nodes joined as --node-rank 1",
                 /*first_joins_as_1=*/true);
}

TEST(NodeLinkTest, AFollowerEndsAtTheStopAndLearnsWhenNodeZeroIsGone) {
  const NodeLayout layout{2, 1, 2};
  std::unique_ptr<LeaderLink> lead = leader(layout);
  ASSERT_NE(lead, nullptr);
  const distributed::DistInitAddr addr{"127.0.0.1", lead->port()};
  std::thread node0([&] {
    ASSERT_TRUE(lead->accept(10s).ok());
    ASSERT_TRUE(lead->send_start({10, 2, 64}).ok());
    ASSERT_TRUE(lead->send_batch(batch_with_id(1)).ok());
  });
  auto link = FollowerLink::join(addr, 1, layout, 10s);
  ASSERT_TRUE(link.ok()) << link.status().to_string();
  node0.join();
  ASSERT_TRUE((*link)->receive_start().ok());
  auto first = (*link)->receive_batch();
  ASSERT_TRUE(first.ok() && first->has_value());
  lead.reset();  // the destructor's stop arrives: a clean end
  auto stop = (*link)->receive_batch();
  ASSERT_TRUE(stop.ok()) << stop.status().to_string();
  EXPECT_FALSE(stop->has_value());
  // Then the socket is closed: a read past the stop (or a node 0 that crashed) is an error.
  auto after = (*link)->receive_batch();
  ASSERT_FALSE(after.ok());
  EXPECT_NE(after.status().message().find("node 0 closed the link"), std::string::npos)
      << after.status().to_string();
}

TEST(NodeLinkTest, NodeZeroLearnsThatAFollowerIsGone) {
  const NodeLayout layout{2, 1, 2};
  std::unique_ptr<LeaderLink> lead = leader(layout);
  ASSERT_NE(lead, nullptr);
  const distributed::DistInitAddr addr{"127.0.0.1", lead->port()};
  std::thread node0([&] { ASSERT_TRUE(lead->accept(10s).ok()); });
  {
    auto link = FollowerLink::join(addr, 1, layout, 10s);
    ASSERT_TRUE(link.ok()) << link.status().to_string();
    node0.join();
  }  // the follower exits
  // The kernel may take the first writes into its buffer; a later one fails.
  Status sent;
  for (int i = 0; i < 1000 && sent.ok(); ++i) sent = lead->send_batch(batch_with_id(i));
  ASSERT_FALSE(sent.ok());
  EXPECT_NE(sent.message().find("node 1 is gone"), std::string::npos) << sent.to_string();
}

TEST(NodeLinkTest, JoiningEndsAtItsDeadline) {
  std::unique_ptr<LeaderLink> lead = leader({2, 1, 3});
  ASSERT_NE(lead, nullptr);
  const distributed::DistInitAddr addr{"127.0.0.1", lead->port()};
  std::thread one([&] { (void)FollowerLink::join(addr, 1, {2, 1, 3}, 10s); });
  const auto begin = std::chrono::steady_clock::now();
  const Status accepted = lead->accept(300ms);  // node 2 never comes
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 5s);
  one.join();
  ASSERT_FALSE(accepted.ok());
  EXPECT_NE(accepted.message().find("1 of 2 other nodes joined node 0 within 300 ms"),
            std::string::npos)
      << accepted.to_string();
  // And a follower with no node 0: its deadline.
  uint16_t port = 0;
  {
    auto probe = distributed::listen_at(kAny, &port);
    ASSERT_TRUE(probe.ok());
  }
  auto none = FollowerLink::join({"127.0.0.1", port}, 1, {2, 1, 2}, 300ms);
  ASSERT_FALSE(none.ok());
}

}  // namespace
}  // namespace sgl::runner
