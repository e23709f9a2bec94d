// ThinkParser.
#include "function_call/think_parser.h"

namespace sgl::function_call {

ThinkParser::ThinkParser(bool force_reasoning, ThinkTags tags)
    : force_reasoning_(force_reasoning),
      start_scanner_({std::string(tags.start)}),
      end_scanner_(tags.interrupt.empty() ? std::vector<std::string>{std::string(tags.end)}
                                          : std::vector<std::string>{std::string(tags.end),
                                                                     std::string(tags.interrupt)}),
      interrupt_(tags.interrupt) {
  reasoning_.skip_leading();
}

void ThinkParser::reasoning(std::string_view s, EventSink& out) {
  std::string t;
  reasoning_.write(s, t);
  out.reasoning(t);
}

void ThinkParser::step(char c, EventSink& out) {
  switch (state_) {
    case State::kStart: {
      if (!start_scanner_.has_pending() && is_json_space(c)) {
        leading_ += c;
        return;
      }
      std::string t;
      if (start_scanner_.step(c, t) >= 0) {
        state_ = State::kReasoning;
        return;
      }
      if (t.empty()) return;  // may still be <think>
      // Not the tag: the output starts with reasoning (forced) or with content.
      std::string rest = std::exchange(leading_, {}) + t + start_scanner_.take_pending();
      if (force_reasoning_) {
        state_ = State::kReasoning;
        feed(rest, out);
      } else {
        state_ = State::kContent;
        out.content(rest);
      }
      return;
    }
    case State::kReasoning: {
      std::string t;
      const int m = end_scanner_.step(c, t);
      reasoning(t, out);
      if (m >= 0) {
        reasoning_.take_held();  // whitespace before </think>
        state_ = State::kContent;
        content_skip_ = m == 0;
        if (m == 1) out.content(interrupt_);  // the tool call it opens is content
      }
      return;
    }
    case State::kContent:
      if (content_skip_ && is_json_space(c)) return;
      content_skip_ = false;
      out.content(std::string_view(&c, 1));
      return;
  }
}

void ThinkParser::finish(EventSink& out) {
  switch (state_) {
    case State::kStart:
      if (force_reasoning_) {
        reasoning(leading_ + start_scanner_.take_pending(), out);
      } else {
        out.content(leading_ + start_scanner_.take_pending());
      }
      break;
    case State::kReasoning:
      reasoning(end_scanner_.take_pending(), out);
      break;
    case State::kContent:
      break;
  }
}

}  // namespace sgl::function_call
