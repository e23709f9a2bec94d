// SseParser: events split at every byte boundary, CRLF / CR / LF endings, multi-line data,
// comments and cut-short streams.
#include "bench_serving/sse_parser.h"

#include <gtest/gtest.h>

namespace sgl::bench_serving {
namespace {

std::vector<std::string> feed_in_pieces(std::string_view stream, size_t piece) {
  SseParser parser;
  std::vector<std::string> events;
  for (size_t i = 0; i < stream.size(); i += piece) parser.feed(stream.substr(i, piece), events);
  EXPECT_FALSE(parser.has_partial_event());
  return events;
}

TEST(SseParser, SplitsEventsWhereverTheBytesAreCut) {
  const std::string stream =
      "data: {\"a\":1}\n\n"
      "data: {\"b\":2}\r\n\r\n"
      ": a comment\n"
      "event: message\n"
      "id: 7\n"
      "data:{\"c\":3}\r\r"
      "data: [DONE]\n\n";
  const std::vector<std::string> expected = {"{\"a\":1}", "{\"b\":2}", "{\"c\":3}", "[DONE]"};
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    EXPECT_EQ(feed_in_pieces(stream, piece), expected) << "piece size " << piece;
  }
}

TEST(SseParser, JoinsMultiLineDataWithNewlines) {
  EXPECT_EQ(feed_in_pieces("data: one\ndata: two\ndata\n\n", 3),
            (std::vector<std::string>{"one\ntwo\n"}));
}

TEST(SseParser, BlankLinesWithoutDataDispatchNothing) {
  EXPECT_TRUE(feed_in_pieces("\n\n: keep-alive\n\n\r\n", 1).empty());
}

TEST(SseParser, ReportsACutShortEvent) {
  SseParser parser;
  std::vector<std::string> events;
  parser.feed("data: {\"a\":1}\n\ndata: {\"b\"", events);
  EXPECT_EQ(events, (std::vector<std::string>{"{\"a\":1}"}));
  EXPECT_TRUE(parser.has_partial_event());
  parser.feed(":2}\n", events);
  EXPECT_TRUE(parser.has_partial_event());  // the line ended, the event did not
  parser.feed("\n", events);
  EXPECT_FALSE(parser.has_partial_event());
  EXPECT_EQ(events.back(), "{\"b\":2}");
}

}  // namespace
}  // namespace sgl::bench_serving
