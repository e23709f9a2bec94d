// The events an incremental output parser emits (content, reasoning, tool-call begin, argument
// deltas), the sink that collects them, and their fold: the whole-text result.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sgl::function_call {

enum class EventKind : uint8_t {
  kContent,            // text of the answer
  kReasoning,          // text of the model's thinking
  kToolCallBegin,      // a call starts: `text` is the function's name
  kToolCallArguments,  // more of the call's arguments (a JSON text, OpenAI's `arguments`)
};

struct ParseEvent {
  EventKind kind = EventKind::kContent;
  int32_t call_index = -1;  // the call (0, 1, ...) for the two tool-call kinds
  std::string text;

  bool operator==(const ParseEvent&) const = default;
};

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text; "{}" for a call without arguments

  bool operator==(const ToolCall&) const = default;
};

// What a whole model output parses into.
struct ParsedOutput {
  std::string content;
  std::string reasoning;
  std::vector<ToolCall> calls;

  void apply(const ParseEvent& e);
  bool operator==(const ParsedOutput&) const = default;
};

ParsedOutput fold(std::span<const ParseEvent> events);

// Collects a parser's events, merging adjacent deltas of one kind (and one call). Call indices
// count every call the sink has seen, so one sink serves a whole output.
class EventSink {
 public:
  void content(std::string_view text) { delta(EventKind::kContent, text); }
  void reasoning(std::string_view text) { delta(EventKind::kReasoning, text); }
  void begin_call(std::string name);
  void arguments(std::string_view text) { delta(EventKind::kToolCallArguments, text); }

  int32_t num_calls() const { return num_calls_; }
  bool empty() const { return events_.empty(); }
  // The events so far (the sink is left empty; call numbering continues).
  std::vector<ParseEvent> take();

 private:
  void delta(EventKind kind, std::string_view text);

  std::vector<ParseEvent> events_;
  int32_t num_calls_ = 0;
};

}  // namespace sgl::function_call
