// gpt-oss's harmony format: messages `<|start|>assistant<|channel|>CHANNEL[ to=RECIPIENT]
// [<|constrain|>json]<|message|>BODY<|end|>` (or <|call|> / <|return|> at the end; the first
// message's `<|start|>assistant` is in the prompt). The analysis channel is reasoning, a message
// to `functions.NAME` a tool call whose body is its arguments, everything else (final,
// commentary preambles) content. Text outside any message is content.
#pragma once

#include <string>

#include "function_call/stream_parser.h"
#include "function_call/text_scan.h"

namespace sgl::function_call {

class HarmonyParser final : public ByteParser {
 public:
  // `parse_calls` false: a message to a function is content (no tools were offered).
  explicit HarmonyParser(bool parse_calls);
  void finish(EventSink& out) override;

 private:
  enum class Body : uint8_t { kContent, kReasoning, kCall };

  void step(char c, EventSink& out) override;
  void body_text(std::string_view s, EventSink& out);
  void start_body(EventSink& out);
  // A message's body ended: a call without arguments gets "{}".
  void end_body(EventSink& out);

  bool parse_calls_;
  MarkerScanner body_scanner_;
  MarkerScanner header_scanner_;
  bool in_header_ = false;
  Body body_ = Body::kContent;
  bool call_args_ = false;  // the current call's body had text
  std::string header_;      // the header read so far, markers included
};

}  // namespace sgl::function_call
