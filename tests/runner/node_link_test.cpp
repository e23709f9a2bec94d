// The link between node 0 and the other nodes (runner/node_link.h), over the loopback: the
// start, batches in order and the stop reach every follower; a follower whose flags differ, a
// node rank out of range or taken twice is refused with the reason on both ends (and a node
// already accepted learns that node 0 ended); a follower learns when node 0 is gone, and node 0
// when a follower is, from a read or send and from their watches (which keep quiet at a normal
// stop); joining ends at its deadline; bad frames are clear errors.
#include "runner/node_link.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
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

// A follower that does not fit is refused; `want` is in the message on both ends. With
// `first_joins_as_1` a good node 1 joins first: when node 0 ends over the refusal, node 1 learns
// it while it waits for every node to join.
void expect_refused(const NodeLayout& ours, const NodeLayout& theirs, int32_t node_rank,
                    const std::string& want, bool first_joins_as_1 = false) {
  std::unique_ptr<LeaderLink> lead = leader(ours);
  ASSERT_NE(lead, nullptr);
  const distributed::DistInitAddr addr{"127.0.0.1", lead->port()};
  Status accepted, first_joined;
  std::thread node0([&] {
    accepted = lead->accept(10s);
    lead.reset();  // node 0 ends
  });
  std::thread first;
  if (first_joins_as_1) {
    first = std::thread([&] { first_joined = FollowerLink::join(addr, 1, ours, 10s).status(); });
    std::this_thread::sleep_for(200ms);  // node 1 first
  }
  auto refused = FollowerLink::join(addr, node_rank, theirs, 10s);
  node0.join();
  if (first.joinable()) first.join();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("node 0 refused this node: " + want), std::string::npos)
      << refused.status().to_string();
  ASSERT_FALSE(accepted.ok());
  EXPECT_NE(accepted.message().find(want), std::string::npos) << accepted.to_string();
  if (first_joins_as_1) {
    ASSERT_FALSE(first_joined.ok());
    EXPECT_NE(first_joined.message().find("waiting for every node to join node 0"),
              std::string::npos)
        << first_joined.to_string();
  }
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
  Status one_joined;
  std::thread one([&] { one_joined = FollowerLink::join(addr, 1, {2, 1, 3}, 10s).status(); });
  const auto begin = std::chrono::steady_clock::now();
  const Status accepted = lead->accept(300ms);  // node 2 never comes
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 5s);
  lead.reset();  // node 0 ends: node 1, waiting for every node, learns it
  one.join();
  ASSERT_FALSE(accepted.ok());
  EXPECT_NE(accepted.message().find("1 of 2 other nodes joined node 0 within 300 ms"),
            std::string::npos)
      << accepted.to_string();
  EXPECT_FALSE(one_joined.ok());
  // And a follower with no node 0: its deadline.
  uint16_t port = 0;
  {
    auto probe = distributed::listen_at(kAny, &port);
    ASSERT_TRUE(probe.ok());
  }
  const auto start = std::chrono::steady_clock::now();
  auto none = FollowerLink::join({"127.0.0.1", port}, 1, {2, 1, 2}, 300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("127.0.0.1"), std::string::npos)
      << none.status().to_string();
}

// Node 0's side played by hand: after the hello and the join, bad frames are errors naming what
// is wrong, never a read past them or an allocation of what a length claims.
class FakeNodeZero {
 public:
  explicit FakeNodeZero(const NodeLayout& layout) {
    auto s = distributed::listen_at(kAny, &port_);
    EXPECT_TRUE(s.ok());
    listener_ = std::move(s).value();
    layout_ = layout;
  }
  // Accepts the follower, answers its hello, sends the join.
  void accept() {
    peer_ = distributed::accept_before(listener_, distributed::SocketClock::now() + 10s);
    ASSERT_TRUE(peer_.valid());
    std::vector<char> hello(32);  // the Hello: magic, 4 u32, u64
    ASSERT_TRUE(distributed::read_all(peer_, hello.data(), hello.size(), deadline()));
    const char magic[8] = {'S', 'G', 'L', 'N', 'O', 'D', 'E', '1'};
    const uint32_t ok = 0, empty = 0;
    ASSERT_TRUE(distributed::write_all(peer_, magic, 8, deadline()));
    ASSERT_TRUE(distributed::write_all(peer_, &ok, 4, deadline()));
    ASSERT_TRUE(distributed::write_all(peer_, &empty, 4, deadline()));
    frame(1, {});  // joined
  }
  void frame(uint32_t kind, const std::vector<uint8_t>& payload, uint64_t claimed = ~0ull) {
    const uint32_t head[2] = {kind, 0};
    const uint64_t length = claimed != ~0ull ? claimed : payload.size();
    ASSERT_TRUE(distributed::write_all(peer_, head, sizeof(head), deadline()));
    ASSERT_TRUE(distributed::write_all(peer_, &length, sizeof(length), deadline()));
    ASSERT_TRUE(distributed::write_all(peer_, payload.data(), payload.size(), deadline()));
  }
  void close() { peer_ = distributed::Socket(); }
  distributed::DistInitAddr addr() const { return {"127.0.0.1", port_}; }

 private:
  static distributed::SocketClock::time_point deadline() {
    return distributed::SocketClock::now() + 10s;
  }
  distributed::Socket listener_, peer_;
  uint16_t port_ = 0;
  NodeLayout layout_;
};

// A follower joined to a fake node 0 that sends `frames` (then closes); what receive_start (when
// `start`) or receive_batch returns.
Status follow_bad_frames(const std::function<void(FakeNodeZero&)>& frames, bool start) {
  const NodeLayout layout{2, 1, 2};
  FakeNodeZero node0(layout);
  std::thread fake([&] {
    node0.accept();
    frames(node0);
    node0.close();
  });
  auto link = FollowerLink::join(node0.addr(), 1, layout, 10s);
  Status got = link.status();
  if (link.ok())
    got = start ? (*link)->receive_start().status() : (*link)->receive_batch().status();
  fake.join();
  return got;
}

// Waits up to 5 s for `done`.
bool eventually(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (!done() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
  return done();
}

TEST(NodeLinkTest, WatchesReportALostNodeButNotTheStop) {
  const NodeLayout layout{2, 1, 2};
  {  // A follower that leaves without the Stop: node 0 hears of it, naming it.
    std::unique_ptr<LeaderLink> lead = leader(layout);
    ASSERT_NE(lead, nullptr);
    const distributed::DistInitAddr addr{"127.0.0.1", lead->port()};
    std::thread follower([&] { (void)FollowerLink::join(addr, 1, layout, 10s); });  // and leaves
    ASSERT_TRUE(lead->accept(10s).ok());
    follower.join();
    std::atomic<int> lost{0};
    lead->watch([&](int node) { lost = node; });
    EXPECT_TRUE(eventually([&] { return lost == 1; })) << "node 0 never heard node 1 was gone";
  }
  {  // The normal end: the Stop, then each side closes; neither watch speaks.
    std::unique_ptr<LeaderLink> lead = leader(layout);
    ASSERT_NE(lead, nullptr);
    const distributed::DistInitAddr addr{"127.0.0.1", lead->port()};
    std::atomic<bool> follower_lost{false};
    std::atomic<int> leader_lost{0};
    std::thread follower([&] {
      auto link = FollowerLink::join(addr, 1, layout, 10s);
      ASSERT_TRUE(link.ok()) << link.status().to_string();
      (*link)->watch([&] { follower_lost = true; }, 200ms);
      auto stop = (*link)->receive_batch();
      EXPECT_TRUE(stop.ok() && !stop->has_value());
      std::this_thread::sleep_for(400ms);  // past the grace, node 0 closed
    });
    ASSERT_TRUE(lead->accept(10s).ok());
    lead->watch([&](int node) { leader_lost = node; });
    lead.reset();  // the Stop
    follower.join();
    EXPECT_FALSE(follower_lost);
    EXPECT_EQ(leader_lost, 0);
  }
  {  // Node 0 gone without a Stop (a crash): the follower hears of it after its grace.
    FakeNodeZero node0(layout);
    std::thread fake([&] { node0.accept(); });
    auto link = FollowerLink::join(node0.addr(), 1, layout, 10s);
    fake.join();
    ASSERT_TRUE(link.ok()) << link.status().to_string();
    std::atomic<bool> lost{false};
    (*link)->watch([&] { lost = true; }, 200ms);
    node0.close();
    EXPECT_TRUE(eventually([&] { return lost.load(); })) << "the follower never heard";
  }
}

TEST(NodeLinkTest, BadFramesAreClearErrors) {
  const auto expect = [](const Status& s, const std::string& want) {
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.to_string().find(want), std::string::npos) << s.to_string();
  };
  // A length no batch has: refused before any allocation.
  expect(follow_bad_frames([](FakeNodeZero& n) { n.frame(3, {}, uint64_t{1} << 40); }, false),
         "a frame of 1099511627776 bytes");
  // A frame cut short.
  expect(follow_bad_frames(
             [](FakeNodeZero& n) {
               n.frame(3, {1, 2, 3}, 100);
             },
             false),
         "closed the link within a frame");
  // A kind that is not a batch, and a start of the wrong size.
  expect(follow_bad_frames([](FakeNodeZero& n) { n.frame(99, {}); }, false),
         "expected a batch, got a frame of kind 99");
  expect(follow_bad_frames(
             [](FakeNodeZero& n) {
               n.frame(2, {1, 2, 3});
             },
             true),
         "expected the start, got a frame of kind 2 (3 bytes)");
  // A batch that does not decode.
  expect(follow_bad_frames(
             [](FakeNodeZero& n) {
               n.frame(3, {1, 2, 3, 4, 5});
             },
             false),
         "InvalidArgument");
}

}  // namespace
}  // namespace sgl::runner
