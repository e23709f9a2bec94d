// SseParser: incremental server-sent-events parsing of a response body that arrives in pieces.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sgl::bench_serving {

// Follows the event-stream format: lines end in LF, CRLF or CR; `data:` lines (one optional
// space after the colon) accumulate, joined by '\n'; a blank line dispatches the event; lines
// starting with ':' are comments; other fields (event, id, retry) are ignored. Bytes may be
// split anywhere, a CRLF included.
class SseParser {
 public:
  // Appends the data of every event completed by `bytes` to `events`.
  void feed(std::string_view bytes, std::vector<std::string>& events);
  // True if bytes of an unfinished line or event are buffered (a stream cut short).
  bool has_partial_event() const { return !line_.empty() || has_data_; }

 private:
  void end_line(std::vector<std::string>& events);

  std::string line_;  // the current line so far
  std::string data_;  // the current event's data so far
  bool has_data_ = false;
  bool after_cr_ = false;  // the last byte was CR: a following LF belongs to it
};

}  // namespace sgl::bench_serving
