// StreamParser: the interface of every incremental output parser (tool-call formats, reasoning
// formats and their composition). Streaming feeds the output's chunks as they come; the
// non-streaming result is the same parser fed the whole text, so the two agree by construction:
// each parser decides from the bytes seen so far only, never from where a chunk ended.
#pragma once

#include <string_view>

#include "function_call/parse_event.h"

namespace sgl::function_call {

class StreamParser {
 public:
  virtual ~StreamParser() = default;
  // More of the output. What is certain goes to `out`; a possible marker or an unfinished call
  // header is held back until decidable.
  virtual void feed(std::string_view text, EventSink& out) = 0;
  // The output ended: what was held back is resolved (text that did not become markup is
  // content; an unfinished call keeps the arguments it got).
  virtual void finish(EventSink& out) = 0;
};

// A parser that decides byte by byte.
class ByteParser : public StreamParser {
 public:
  void feed(std::string_view text, EventSink& out) final {
    for (char c : text) step(c, out);
  }

 protected:
  virtual void step(char c, EventSink& out) = 0;
};

// The whole output through `parser` (fed once, then finished).
ParsedOutput parse_whole(StreamParser& parser, std::string_view text);

}  // namespace sgl::function_call
