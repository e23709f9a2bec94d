// Reasoning between an opening and a closing tag: <think> and </think> (qwen3, deepseek-r1),
// [THINK] and [/THINK] (mistral: Magistral). The opening tag is recognised at the start of the
// output (after whitespace); with `force_reasoning` the output starts inside the reasoning even
// without it (DeepSeek-R1 omits it; a chat template may have written it into the prompt).
// Everything after the closing tag is content; an output that never closes its reasoning is all
// reasoning. Whitespace next to the tags is trimmed. A format may name a tool-call marker that
// also ends the reasoning (Qwen3 models may open <tool_call> without closing </think>): the
// marker then starts the content, whichever of the two comes first.
#pragma once

#include <string>
#include <string_view>

#include "function_call/stream_parser.h"
#include "function_call/text_scan.h"

namespace sgl::function_call {

// The reasoning's tags.
struct ThinkTags {
  std::string_view start;
  std::string_view end;
  std::string_view interrupt = {};  // a tool call's opening marker that ends it too; empty: none
};
inline constexpr ThinkTags kThinkTags = {"<think>", "</think>"};
inline constexpr ThinkTags kMistralThinkTags = {"[THINK]", "[/THINK]"};
// SGLang's Qwen3Detector: its tool_start_token <tool_call> closes the reasoning too.
inline constexpr ThinkTags kQwen3ThinkTags = {"<think>", "</think>", "<tool_call>"};

class ThinkParser final : public ByteParser {
 public:
  ThinkParser(bool force_reasoning, ThinkTags tags = kThinkTags);
  void finish(EventSink& out) override;

 private:
  enum class State : uint8_t { kStart, kReasoning, kContent };

  void step(char c, EventSink& out) override;
  void reasoning(std::string_view s, EventSink& out);

  bool force_reasoning_;
  State state_ = State::kStart;
  MarkerScanner start_scanner_;
  MarkerScanner end_scanner_;  // the end tag (0), the interrupt (1) when there is one
  std::string interrupt_;
  TrimmedText reasoning_;
  std::string leading_;        // whitespace before anything else
  bool content_skip_ = false;  // whitespace right after </think> is dropped
};

}  // namespace sgl::function_call
