// RequestStream: events a slow reader takes together arrive merged, with the times the engine
// pushed their first and last tokens.
#include "engine/request_stream.h"

#include <gtest/gtest.h>

#include <thread>

namespace sgl::engine {
namespace {

StreamEvent tokens(std::vector<int32_t> ids) {
  StreamEvent e;
  e.token_ids = std::move(ids);
  return e;
}

TEST(RequestStream, MergedEventsKeepTheirFirstAndLastTokenTimes) {
  RequestStream stream(1);
  const auto before = std::chrono::steady_clock::now();
  stream.push(tokens({1}));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stream.push(tokens({2, 3}));
  StreamEvent no_tokens;  // a usage-only event moves neither time
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stream.push(std::move(no_tokens));
  const auto after = std::chrono::steady_clock::now();

  std::optional<StreamEvent> e = stream.next(std::chrono::milliseconds(0));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->token_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_GE(e->first_token_time, before);
  EXPECT_GE(e->last_token_time - e->first_token_time, std::chrono::milliseconds(5));
  EXPECT_LE(e->last_token_time + std::chrono::milliseconds(5), after);
  EXPECT_FALSE(stream.next(std::chrono::milliseconds(0)).has_value());
}

TEST(RequestStream, NothingIsTakenAfterTheFinish) {
  RequestStream stream(2);
  StreamEvent last = tokens({7});
  last.finished = scheduler::FinishState{};
  stream.push(std::move(last));
  stream.push(tokens({8}));  // after the finish: dropped
  std::optional<StreamEvent> e = stream.next(std::chrono::milliseconds(0));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->token_ids, (std::vector<int32_t>{7}));
  EXPECT_TRUE(stream.done());
  EXPECT_FALSE(stream.next(std::chrono::milliseconds(0)).has_value());
}

}  // namespace
}  // namespace sgl::engine
