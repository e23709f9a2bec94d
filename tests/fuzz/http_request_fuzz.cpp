// libFuzzer harness: the bytes are a client's stream of pipelined requests, read by the HTTP
// session's RequestReader (Beast's parser under the server's framing rules and bounds) with the
// server's default limits. Checks: no crash or exception, the buffering bounds hold, bodies
// agree with their framing, and the outcome does not depend on how the bytes are split.
// NOTE: build it with -DNDEBUG, as the server is built: Beast 1.74's debug assertion `n >= 5`
// (basic_parser.ipp:688) fails on any last chunk fed a byte at a time ("0\r\n" then one more
// byte), a case its release code parses correctly.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/http_framing.h"
#include "server/http_request_reader.h"
#include "server/http_server.h"

namespace {

using sgl::server::detail::RequestReader;
using Event = RequestReader::Event;

void check(bool ok) {
  if (!ok) std::abort();
}

// What one pass over the input produced: each event, with the status or the body it came with.
struct Trace {
  std::vector<Event> events;
  std::vector<int> statuses;
  std::vector<std::string> bodies;
  bool operator==(const Trace&) const = default;
};

// Feeds `input` to a reader `step` bytes at a time, as the session does with its reads.
Trace read_all(std::string_view input, size_t step) {
  const sgl::server::HttpServerOptions options;  // the limits the server runs with by default
  RequestReader reader({options.max_header_bytes, options.max_body_bytes});
  Trace trace;
  std::string buffer;  // arrived, not yet parsed
  size_t arrived = 0;
  bool in_body = false;
  for (;;) {
    size_t used = 0;
    const Event event = reader.parse(buffer, used);
    check(used <= buffer.size());
    buffer.erase(0, used);
    if (event != Event::kNeedMore) trace.events.push_back(event);
    switch (event) {
      case Event::kHeader:
        check(!in_body);
        in_body = true;
        break;
      case Event::kDone: {
        const sgl::server::Framing framing = reader.framing();
        const RequestReader::Request request = reader.release();
        check(request.body().size() <= options.max_body_bytes);
        check(!framing.content_length || request.body().size() == *framing.content_length);
        check(framing.chunked || framing.content_length || request.body().empty());
        trace.bodies.push_back(request.body());
        reader.start();
        in_body = false;
        break;
      }
      case Event::kError: {
        const int status = reader.error().status;
        check(status == 400 || status == 413 || status == 431 || status == 501 || status == 505);
        check(!reader.error().message.empty());
        trace.statuses.push_back(status);
        return trace;
      }
      case Event::kNeedMore:
        // What waits unparsed stays bounded: a header under its limit; a chunked body's pending
        // chunk-size line or trailer under kMaxChunkLineBytes; nothing of a sized body.
        if (!in_body) {
          check(buffer.size() < options.max_header_bytes);
        } else if (reader.framing().chunked) {
          check(buffer.size() < sgl::server::kMaxChunkLineBytes);
        } else {
          check(buffer.empty());
        }
        if (arrived == input.size()) return trace;
        const size_t n = std::min(step, input.size() - arrived);
        buffer.append(input.substr(arrived, n));
        arrived += n;
        break;
    }
  }
}

// Traces of one input read in different pieces agree, except that the parser may refuse a
// malformed header early when it sees more of it at once, where a reader fed less waits for
// the header's end: then the one left waiting must be the other without its final error.
bool agree(Trace a, Trace b) {
  if (a.statuses.empty() != b.statuses.empty()) {
    Trace& failed = a.statuses.empty() ? b : a;
    failed.events.pop_back();
    failed.statuses.clear();
  }
  return a == b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const Trace whole = read_all(input, input.size() + 1);
  const Trace split = read_all(input, 1 + size % 31);
  check(agree(whole, split));
  return 0;
}
