// SessionStore: the history each turn runs on (append, drop_previous_output, offsets, BOS),
// replace's pruning and aborts, the refusals SGLang makes, and idle timeouts.
#include "server/session_store.h"

#include <gtest/gtest.h>

namespace sgl::server {
namespace {

using Ids = std::vector<int32_t>;
constexpr int32_t kBos = 1;

SessionParams params(std::optional<std::string> rid = std::nullopt) {
  SessionParams p;
  p.id = "s";
  p.rid = std::move(rid);
  return p;
}

TEST(SessionStore, TurnsContinueTheNamedRequest) {
  SessionStore store;
  ASSERT_TRUE(store.open("s", std::nullopt).ok());
  EXPECT_FALSE(store.open("s", std::nullopt).ok());  // already open
  auto first = store.begin(params(), "a", {kBos, 10, 11}, kBos);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->input_ids, (Ids{kBos, 10, 11}));  // a root keeps its BOS
  // Appending to a request still running is refused.
  EXPECT_FALSE(store.begin(params("a"), "b", {kBos, 20}, kBos).ok());
  store.finish("s", "a", Ids{12, 13});
  auto second = store.begin(params("a"), "b", {kBos, 20}, kBos);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->input_ids, (Ids{kBos, 10, 11, 12, 13, 20}));  // the prompt's BOS stripped
  store.finish("s", "b", Ids{21});
  // Branching from "a" again, without its output.
  SessionParams p = params("a");
  p.drop_previous_output = true;
  auto third = store.begin(p, "c", {30}, kBos);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->input_ids, (Ids{kBos, 10, 11, 30}));
  // An offset cuts the history (Python's [:offset], negative counts from the end).
  store.finish("s", "c", Ids{31});
  p = params("b");
  p.offset = 3;
  EXPECT_EQ(store.begin(p, "d", {40}, kBos)->input_ids, (Ids{kBos, 10, 11, 40}));
  p.offset = -2;
  EXPECT_EQ(store.begin(p, "e", {41}, kBos)->input_ids, (Ids{kBos, 10, 11, 12, 13, 41}));
  p.offset = 100;
  EXPECT_EQ(store.begin(p, "f", {42}, kBos)->input_ids, (Ids{kBos, 10, 11, 12, 13, 20, 21, 42}));
}

TEST(SessionStore, Refusals) {
  SessionStore store;
  EXPECT_FALSE(store.begin(params(), "a", {5}, kBos).ok());  // no such session
  ASSERT_TRUE(store.open("s", std::nullopt).ok());
  EXPECT_FALSE(store.begin(params("missing"), "a", {5}, kBos).ok());
  ASSERT_TRUE(store.begin(params(), "a", {5}, kBos).ok());
  EXPECT_FALSE(store.begin(params(), "a", {6}, kBos).ok());  // "a" is taken
  store.finish("s", "a", Ids{});
  SessionParams p = params("a");
  p.offset = -5;
  p.drop_previous_output = true;
  const auto empty = store.begin(p, "b", {kBos}, kBos);  // nothing left: refused
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("must contain input tokens"), std::string::npos);
  store.close("s");
  store.close("never-opened");  // nothing, as SGLang
  EXPECT_FALSE(store.begin(params(), "c", {5}, kBos).ok());
  EXPECT_EQ(store.size(), 0u);
}

TEST(SessionStore, ReplaceDropsTheContinuationsAndAbortsTheRunningOnes) {
  SessionStore store;
  ASSERT_TRUE(store.open("s", std::nullopt).ok());
  ASSERT_TRUE(store.begin(params(), "a", {5}, kBos).ok());
  store.finish("s", "a", Ids{6});
  ASSERT_TRUE(store.begin(params("a"), "b", {7}, kBos).ok());
  store.finish("s", "b", Ids{8});
  ASSERT_TRUE(store.begin(params("b"), "c", {9}, kBos).ok());  // still running
  SessionParams p = params("a");
  p.replace = true;
  auto replaced = store.begin(p, "d", {10}, kBos);
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(replaced->input_ids, (Ids{5, 6, 10}));
  EXPECT_EQ(replaced->to_abort, (std::vector<std::string>{"c"}));
  EXPECT_FALSE(store.begin(params("b"), "e", {11}, kBos).ok());  // "b" is gone
  // replace without a rid: every request goes; the turn starts afresh.
  p = params();
  p.replace = true;
  auto fresh = store.begin(p, "g", {13}, kBos);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->input_ids, (Ids{13}));
  EXPECT_EQ(fresh->to_abort, (std::vector<std::string>{"d"}));
  EXPECT_FALSE(store.begin(params("a"), "h", {14}, kBos).ok());
}

TEST(SessionStore, ReplacingARunningRequestAbortsItAndContinuesItsOutputSoFar) {
  SessionStore store;
  ASSERT_TRUE(store.open("s", std::nullopt).ok());
  ASSERT_TRUE(store.begin(params(), "a", {5}, kBos).ok());  // still running
  store.append_output("s", "a", Ids{6});
  store.append_output("s", "a", Ids{});
  store.append_output("s", "a", Ids{7, 8});
  // Appending to it is refused; replacing it aborts it and runs on what it has.
  EXPECT_FALSE(store.begin(params("a"), "b", {9}, kBos).ok());
  SessionParams p = params("a");
  p.replace = true;
  auto replaced = store.begin(p, "b", {kBos, 9}, kBos);
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(replaced->input_ids, (Ids{5, 6, 7, 8, 9}));
  EXPECT_EQ(replaced->to_abort, (std::vector<std::string>{"a"}));
  // Its end records its whole output (a token came before the abort landed); appends after
  // that, and to turns or sessions that are gone, change nothing.
  store.finish("s", "a", Ids{6, 7, 8, 10});
  store.append_output("s", "a", Ids{11});
  store.append_output("s", "nobody", Ids{11});
  store.append_output("nowhere", "a", Ids{11});
  store.finish("s", "b", Ids{12});
  auto next = store.begin(params("a"), "c", {13}, kBos);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->input_ids, (Ids{5, 6, 7, 8, 10, 13}));
  EXPECT_TRUE(next->to_abort.empty());
  // Replacing it again (finished now) drops "b" and "c"; only "c" still runs.
  auto again = store.begin(p, "d", {14}, kBos);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->to_abort, (std::vector<std::string>{"c"}));
}

TEST(SessionStore, AnAbandonedTurnLeavesNoNode) {
  SessionStore store;
  ASSERT_TRUE(store.open("s", std::nullopt).ok());
  ASSERT_TRUE(store.begin(params(), "a", {5}, kBos).ok());
  store.finish("s", "a", Ids{6});
  ASSERT_TRUE(store.begin(params("a"), "b", {7}, kBos).ok());
  store.abandon("s", "b");
  EXPECT_FALSE(store.begin(params("b"), "c", {8}, kBos).ok());
  // "b" may be used again; replacing "a" finds no continuation of it to abort.
  SessionParams p = params("a");
  p.replace = true;
  auto again = store.begin(p, "b", {9}, kBos);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->to_abort.empty());
}

TEST(SessionStore, IdleSessionsTimeOut) {
  SessionStore store;
  SessionStore::Clock::time_point now{};
  store.set_clock_for_testing([&] { return now; });
  ASSERT_TRUE(store.open("short", 5.0).ok());
  ASSERT_TRUE(store.open("forever", std::nullopt).ok());
  now += std::chrono::seconds(4);
  SessionParams p = params();
  p.id = "short";
  ASSERT_TRUE(store.begin(p, "a", {5}, kBos).ok());  // activity: the clock restarts
  now += std::chrono::seconds(4);
  store.finish("short", "a", Ids{6});
  now += std::chrono::seconds(6);
  p.id = "forever";
  ASSERT_TRUE(store.begin(p, "b", {5}, kBos).ok());  // reaps "short"
  EXPECT_EQ(store.size(), 1u);
  p.id = "short";
  EXPECT_FALSE(store.begin(p, "c", {5}, kBos).ok());
}

}  // namespace
}  // namespace sgl::server
