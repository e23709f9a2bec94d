// ReqToTokenPool and TokenToKvPoolAllocator: allocation, exhaustion, integrity, recorded writes.
#include <gtest/gtest.h>

#include <random>

#include "cache/req_to_token_pool.h"
#include "cache/token_to_kv_pool_allocator.h"

namespace sgl::cache {
namespace {

TEST(TokenToKvPoolAllocator, NeverHandsOutSlotZeroAndConservesSlots) {
  TokenToKvPoolAllocator alloc(9);
  EXPECT_EQ(alloc.capacity(), 8);
  auto a = alloc.alloc(5);
  ASSERT_TRUE(a);
  for (int32_t s : *a) EXPECT_GE(s, 1);
  EXPECT_FALSE(alloc.alloc(4));  // only 3 left: nothing taken
  EXPECT_EQ(alloc.available(), 3);
  EXPECT_TRUE(alloc.check_integrity().ok());
  alloc.free(*a);
  EXPECT_EQ(alloc.available(), 8);
  EXPECT_TRUE(alloc.check_integrity().ok());
}

TEST(TokenToKvPoolAllocator, RandomizedAllocFreeKeepsIntegrity) {
  TokenToKvPoolAllocator alloc(101);
  std::mt19937 rng(1);
  std::vector<std::vector<int32_t>> held;
  for (int step = 0; step < 2000; ++step) {
    if (held.empty() || rng() % 2) {
      if (auto s = alloc.alloc(static_cast<int32_t>(rng() % 10))) held.push_back(*s);
    } else {
      const size_t i = rng() % held.size();
      alloc.free(held[i]);
      held.erase(held.begin() + static_cast<long>(i));
    }
    ASSERT_TRUE(alloc.check_integrity().ok()) << alloc.check_integrity().to_string();
  }
}

TEST(TokenToKvPoolAllocator, DoubleFreeIsABug) {
  TokenToKvPoolAllocator alloc(4);
  auto a = *alloc.alloc(1);
  alloc.free(a);
  EXPECT_DEATH(alloc.free(a), "not in use");
}

TEST(ReqToTokenPool, RowsAllocWriteFree) {
  ReqToTokenPool pool(2, 8);
  auto r0 = pool.alloc(), r1 = pool.alloc();
  ASSERT_TRUE(r0 && r1);
  EXPECT_FALSE(pool.alloc());
  std::vector<int32_t> slots = {4, 5, 6};
  pool.write(*r1, 2, slots);
  EXPECT_EQ(pool.row(*r1)[3], 5);
  EXPECT_TRUE(pool.check_integrity().ok());
  pool.free(*r0);
  EXPECT_EQ(pool.available(), 1);
  EXPECT_TRUE(pool.check_integrity().ok());
  EXPECT_DEATH(pool.write(*r1, 7, slots), "beyond context");
}

// A copy of the table that applies the recorded writes, in order, ends up equal to the pool's:
// the runner keeps such a copy so that it never reads rows the scheduler is rewriting.
TEST(ReqToTokenPool, RecordedWritesBringACopyUpToDate) {
  ReqToTokenPool pool(3, 6);
  const int32_t r0 = *pool.alloc(), r1 = *pool.alloc();
  pool.write(r0, 0, std::vector<int32_t>{9, 9});  // before recording: not recorded
  pool.record_writes();
  pool.write(r0, 0, std::vector<int32_t>{1, 2, 3});
  pool.write(r1, 4, std::vector<int32_t>{7, 8});
  pool.write(r0, 1, std::vector<int32_t>{5});  // a rewrite: the later write wins
  ReqToTokenWrites writes = pool.take_writes();
  EXPECT_EQ(writes.writes.size(), 3u);
  EXPECT_TRUE(pool.take_writes().empty());  // taking empties the record

  ReqToTokenTable copy(3, 6);
  copy.apply(writes);
  for (int32_t row : {r0, r1, 2}) {
    EXPECT_EQ(std::vector<int32_t>(copy.row(row).begin(), copy.row(row).end()),
              std::vector<int32_t>(pool.row(row).begin(), pool.row(row).end()))
        << "row " << row;
  }
  EXPECT_EQ(copy.row(r0)[1], 5);
  EXPECT_DEATH(copy.write(3, 0, std::vector<int32_t>{1}), "row 3");
}

}  // namespace
}  // namespace sgl::cache
