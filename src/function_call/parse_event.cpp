// ParseEvent's fold and EventSink.
#include "function_call/parse_event.h"

#include <utility>

namespace sgl::function_call {

void ParsedOutput::apply(const ParseEvent& e) {
  switch (e.kind) {
    case EventKind::kContent:
      content += e.text;
      break;
    case EventKind::kReasoning:
      reasoning += e.text;
      break;
    case EventKind::kToolCallBegin:
      calls.push_back({e.text, ""});
      break;
    case EventKind::kToolCallArguments:
      if (!calls.empty()) calls.back().arguments += e.text;
      break;
  }
}

ParsedOutput fold(std::span<const ParseEvent> events) {
  ParsedOutput out;
  for (const ParseEvent& e : events) out.apply(e);
  return out;
}

void EventSink::begin_call(std::string name) {
  events_.push_back({EventKind::kToolCallBegin, num_calls_++, std::move(name)});
}

void EventSink::delta(EventKind kind, std::string_view text) {
  if (text.empty()) return;
  const int32_t call = kind == EventKind::kToolCallArguments ? num_calls_ - 1 : -1;
  if (!events_.empty() && events_.back().kind == kind && events_.back().call_index == call) {
    events_.back().text += text;
    return;
  }
  events_.push_back({kind, call, std::string(text)});
}

std::vector<ParseEvent> EventSink::take() { return std::exchange(events_, {}); }

}  // namespace sgl::function_call
