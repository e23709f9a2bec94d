// Reasoning between an opening and a closing tag: <think> and </think> (qwen3, deepseek-r1),
// [THINK] and [/THINK] (mistral: Magistral). The opening tag is recognised at the start of the
// output (after whitespace); with `force_reasoning` the output starts inside the reasoning even
// without it (DeepSeek-R1 omits it; a chat template may have written it into the prompt).
// Everything after the closing tag is content; an output that never closes its reasoning is all
// reasoning. Whitespace next to the tags is trimmed.
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
};
inline constexpr ThinkTags kThinkTags = {"<think>", "</think>"};
inline constexpr ThinkTags kMistralThinkTags = {"[THINK]", "[/THINK]"};

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
  MarkerScanner end_scanner_;
  TrimmedText reasoning_;
  std::string leading_;        // whitespace before anything else
  bool content_skip_ = false;  // whitespace right after </think> is dropped
};

}  // namespace sgl::function_call
