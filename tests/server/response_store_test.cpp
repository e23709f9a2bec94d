// ResponseStore: what it keeps within its byte budget (the oldest dropped first), replacement,
// removal, a response larger than the budget, and conversations that continue each other
// sharing their turns (each counted once while a stored response reaches it).
#include "server/response_store.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace sgl::server {
namespace {

std::shared_ptr<const ConversationTurn> turn(std::shared_ptr<const ConversationTurn> previous,
                                             std::string items) {
  return std::make_shared<const ConversationTurn>(
      ConversationTurn{std::move(previous), std::move(items)});
}

ResponseStore::Stored of(size_t bytes) { return {std::string(bytes, 'r'), turn(nullptr, "[]")}; }

TEST(ResponseStore, DropsTheOldestPastItsBudget) {
  ResponseStore store(100);  // each entry below: 2 (id) + 30 + 2 = 34 bytes
  store.put("r1", of(30));
  store.put("r2", of(30));
  EXPECT_EQ(store.bytes(), 68u);
  store.put("r3", of(30));  // 102 > 100: r1 goes
  EXPECT_FALSE(store.get("r1"));
  ASSERT_TRUE(store.get("r2"));
  EXPECT_EQ(store.get("r2")->response_json, std::string(30, 'r'));
  EXPECT_EQ(store.bytes(), 68u);
  // Replacing r2 makes it the newest: r3 goes before it.
  store.put("r2", of(20));
  store.put("r4", of(40));
  EXPECT_FALSE(store.get("r3"));
  EXPECT_TRUE(store.get("r2") && store.get("r4"));
  EXPECT_EQ(store.bytes(), 24u + 44u);
}

TEST(ResponseStore, RemovesAndRefusesWhatCannotFit) {
  ResponseStore store(100);
  store.put("r1", of(10));
  EXPECT_TRUE(store.remove("r1"));
  EXPECT_FALSE(store.remove("r1"));
  EXPECT_EQ(store.bytes(), 0u);
  store.put("big", of(200));  // larger than the whole budget: not kept, nothing dropped for it
  EXPECT_FALSE(store.get("big"));
  // Many stores and removals keep the bookkeeping bounded and correct.
  for (int i = 0; i < 1000; ++i) {
    const std::string id = "x" + std::to_string(i);
    store.put(id, of(5));
    EXPECT_TRUE(store.remove(id));
  }
  EXPECT_LE(store.places(), 67u);  // compacted past 2 x stored + 64 (removed ones dropped)
  store.put("last", of(10));
  EXPECT_TRUE(store.get("last"));
  EXPECT_EQ(store.bytes(), 4u + 10u + 2u);
}

TEST(ResponseStore, AChainHoldsEachTurnOnce) {
  ResponseStore store(1 << 20);
  // 100 responses, each continuing the one before with a turn of 100 bytes: linear, not the
  // 100 * 101 / 2 turns a copy of the whole conversation per response would hold.
  std::shared_ptr<const ConversationTurn> last;
  for (int i = 0; i < 100; ++i) {
    last = turn(last, std::string(100, 'a' + i % 26));
    store.put("r" + std::to_string(i), {"R", last});
  }
  size_t ids = 0;
  for (int i = 0; i < 100; ++i) ids += ("r" + std::to_string(i)).size();
  EXPECT_EQ(store.bytes(), ids + 100 * 1 + 100 * 100);
  const auto got = store.get("r99");
  ASSERT_TRUE(got);
  const std::vector<const std::string*> turns = got->conversation->items_in_order();
  ASSERT_EQ(turns.size(), 100u);
  EXPECT_EQ(*turns.front(), std::string(100, 'a'));
  EXPECT_EQ(*turns.back(), std::string(100, 'a' + 99 % 26));
  // The first response removed: its turn stays (r1 .. r99 reach it); only its id and object go.
  EXPECT_TRUE(store.remove("r0"));
  EXPECT_EQ(store.bytes(), ids - 2 + 99 + 100 * 100);
  EXPECT_EQ(store.get("r99")->conversation->items_in_order().size(), 100u);
  // Removing the last leaves its turn to nobody.
  EXPECT_TRUE(store.remove("r99"));
  EXPECT_EQ(store.bytes(), ids - 2 - 3 + 98 + 99 * 100);
  for (int i = 1; i < 99; ++i) EXPECT_TRUE(store.remove("r" + std::to_string(i)));
  EXPECT_EQ(store.bytes(), 0u);
}

TEST(ResponseStore, EvictionCountsTheTurnsANewResponseBringsAlone) {
  ResponseStore store(305);
  const auto first = turn(nullptr, std::string(100, 'x'));
  store.put("a", {"A", first});                               // 1 + 1 + 100
  store.put("b", {"B", turn(first, std::string(100, 'y'))});  // 1 + 1 + 100: 'first' is shared
  EXPECT_EQ(store.bytes(), 204u);
  // c continues b (both turns reached already): 2 bytes more, nothing dropped.
  const auto b_turn = store.get("b")->conversation;
  store.put("c", {"C", turn(b_turn, "")});
  EXPECT_EQ(store.bytes(), 206u);
  EXPECT_TRUE(store.contains("a"));
  // d brings 100 new bytes: the oldest (a) goes, but its turn stays, reached by b and c.
  store.put("d", {"D", turn(nullptr, std::string(98, 'z'))});
  EXPECT_FALSE(store.contains("a"));
  EXPECT_EQ(store.bytes(), 206u - 2 + 100);
  ASSERT_TRUE(store.get("c"));
  EXPECT_EQ(store.get("c")->conversation->items_in_order().size(), 3u);
}

}  // namespace
}  // namespace sgl::server
