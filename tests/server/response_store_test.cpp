// ResponseStore: what it keeps within its byte budget (the oldest dropped first), replacement,
// removal, and a response larger than the budget.
#include "server/response_store.h"

#include <gtest/gtest.h>

#include <string>

namespace sgl::server {
namespace {

ResponseStore::Stored of(size_t bytes) { return {std::string(bytes, 'r'), "[]"}; }

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

}  // namespace
}  // namespace sgl::server
