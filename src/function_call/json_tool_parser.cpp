// JsonToolParser.
#include "function_call/json_tool_parser.h"

#include <cctype>

namespace sgl::function_call {

JsonToolFormat qwen25_format() { return {.start = "<tool_call>", .end = "</tool_call>"}; }
JsonToolFormat llama3_format() {
  return {.start = "<|python_tag|>",
          .end = "",
          .array = false,
          .separator = ';',
          .bare_at_start = true,
          .special_start = true};
}
JsonToolFormat mistral_format() {
  return {.start = "[TOOL_CALLS]", .end = "", .array = true, .compact = true};
}
JsonToolFormat json_array_format() {
  return {.start = "", .end = "", .array = true, .bare_at_start = true};
}

namespace {

constexpr std::string_view kArgs = "[ARGS]";
constexpr std::string_view kCallId = "[CALL_ID]";
// Longer held markup (marker, name, tags, call id) is not a call.
constexpr size_t kMaxCompactMarkupBytes = 320;

// A function name's bytes (OpenAI's [a-zA-Z0-9_-], and '.'), and a call id's.
bool is_name_byte(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}
bool is_id_byte(char c) { return std::isalnum(static_cast<unsigned char>(c)); }

}  // namespace

JsonToolParser::JsonToolParser(JsonToolFormat format, std::shared_ptr<const ToolNames> names)
    : format_(std::move(format)),
      scanner_(format_.start.empty() ? std::vector<std::string>{}
                                     : std::vector<std::string>{format_.start}),
      state_(format_.bare_at_start ? State::kStart : State::kText),
      call_(std::move(names)),
      skip_scanner_(format_.end.empty() ? std::vector<std::string>{}
                                        : std::vector<std::string>{format_.end}) {}

void JsonToolParser::text(std::string_view s, EventSink& out) {
  std::string t;
  text_.write(s, t);
  out.content(t);
}

void JsonToolParser::start_object(char c, EventSink& out) {
  call_.reset();
  object_at_ = raw_.size();
  raw_ += c;
  (void)call_.step(c, out);  // '{' always opens
  state_ = State::kObject;
}

void JsonToolParser::fall_back(char c, EventSink& out) {
  state_ = State::kText;
  text(std::exchange(raw_, {}), out);
  step(c, out);
}

void JsonToolParser::raw_as_content(EventSink& out) {
  text(std::exchange(raw_, {}), out);
  out.content(text_.take_held());
}

void JsonToolParser::back_to_text(char c, EventSink& out) {
  state_ = State::kText;
  raw_.clear();
  text_.skip_leading();
  step(c, out);
}

void JsonToolParser::end_block() {
  state_ = State::kText;
  raw_.clear();
  text_.skip_leading();
}

void JsonToolParser::after_broken_call(char c, EventSink& out) {
  if (format_.end.empty()) return back_to_text(c, out);
  state_ = State::kSkipToEnd;
  raw_.clear();
  (void)skip_scanner_.take_pending();
  step(c, out);
}

void JsonToolParser::step(char c, EventSink& out) {
  switch (state_) {
    case State::kStart:
      if (is_json_space(c)) {
        text(std::string_view(&c, 1), out);  // held: dropped if a call follows
        return;
      }
      if (c == '{') {
        raw_ = text_.take_held();
        in_array_ = false;
        after_marker_ = false;
        start_object(c, out);
        return;
      }
      if (c == '[' && format_.array) {
        raw_ = text_.take_held();
        after_marker_ = false;
        state_ = State::kOpen;
        step(c, out);
        return;
      }
      state_ = State::kText;
      step(c, out);
      return;
    case State::kText: {
      std::string t;
      const int marker = scanner_.step(c, t);
      text(t, out);
      if (marker >= 0) {
        raw_ = text_.take_held();
        if (!format_.special_start) raw_ += format_.start;
        after_marker_ = true;
        state_ = State::kOpen;
      }
      return;
    }
    case State::kOpen:
      if (is_json_space(c)) {
        raw_ += c;
        return;
      }
      if (c == '[' && format_.array) {
        raw_ += c;
        in_array_ = true;
        block_has_call_ = false;
        state_ = State::kArrayNext;
        return;
      }
      if (c == '{') {
        in_array_ = false;
        start_object(c, out);
        return;
      }
      if (format_.compact && is_name_byte(c)) {
        raw_ += c;
        name_.assign(1, c);
        tag_ = LiteralChoice({kArgs, kCallId});
        state_ = State::kCompactName;
        return;
      }
      fall_back(c, out);
      return;
    case State::kCompactName:
    case State::kCompactId: {
      // NAME (or the call id), then [ARGS] (or [CALL_ID] after the name).
      const bool in_name = state_ == State::kCompactName;
      if (raw_.size() >= kMaxCompactMarkupBytes) {
        fall_back(c, out);
        return;
      }
      if (tag_.read().empty() && (in_name ? is_name_byte(c) : is_id_byte(c))) {
        raw_ += c;
        if (in_name) name_ += c;
        return;
      }
      const int tag = tag_.step(c);
      if (tag == LiteralChoice::kMismatch) {
        fall_back(c, out);
        return;
      }
      raw_ += c;
      if (tag == LiteralChoice::kMore) return;
      tag_.reset();
      if (tag == 1) {  // [CALL_ID]: the id that follows is not kept
        tag_ = LiteralChoice({kArgs});
        state_ = State::kCompactId;
        return;
      }
      args_.reset();
      dropping_args_ = false;
      state_ = State::kCompactArgs;
      return;
    }
    case State::kCompactArgs:
      // The call begins with its arguments' first byte (an object or array, as SGLang reads it).
      if (!args_.started()) {
        if (is_json_space(c)) {
          raw_ += c;
          return;
        }
        if (c != '{' && c != '[') {
          fall_back(c, out);
          return;
        }
        dropping_args_ = !call_.allows(name_);
        if (!dropping_args_) out.begin_call(name_);
        raw_.clear();
      }
      switch (dropping_args_ ? args_.step(c) : stream_arguments(args_, c, out)) {
        case JsonScanner::Step::kMore:
          return;
        case JsonScanner::Step::kComplete:
          end_block();
          return;
        case JsonScanner::Step::kCompleteBefore:
        case JsonScanner::Step::kError:
          back_to_text(c, out);
          return;
      }
      return;
    case State::kArrayNext:
      if (is_json_space(c)) {
        raw_ += c;
        return;
      }
      if (c == '{') {
        start_object(c, out);
        return;
      }
      if (c == ']' && block_has_call_) {
        end_block();
        return;
      }
      fall_back(c, out);
      return;
    case State::kObject: {
      const JsonCallReader::Step s = call_.step(c, out);
      if (s == JsonCallReader::Step::kMore) {
        if (!call_.begun()) raw_ += c;
        return;
      }
      if (s == JsonCallReader::Step::kDone) {
        raw_.clear();
        block_has_call_ = true;
        state_ = State::kAfterObject;
        return;
      }
      if (call_.begun()) {
        after_broken_call(c, out);
      } else if (call_.refused_name() && after_marker_) {
        // The object so far, then on to its end.
        skipped_.reset();
        for (char b : std::string_view(raw_).substr(object_at_)) (void)skipped_.step(b);
        raw_.clear();
        state_ = State::kSkipObject;
        step(c, out);
      } else {
        fall_back(c, out);
      }
      return;
    }
    case State::kSkipObject:
      switch (skipped_.step(c)) {
        case JsonScanner::Step::kMore:
          return;
        case JsonScanner::Step::kComplete:
          state_ = State::kAfterObject;
          return;
        case JsonScanner::Step::kCompleteBefore:
        case JsonScanner::Step::kError:
          after_broken_call(c, out);
          return;
      }
      return;
    case State::kAfterObject:
      if (is_json_space(c)) return;
      if (in_array_) {
        if (c == ',') {
          raw_.assign(1, c);
          state_ = State::kArrayNext;
        } else if (c == ']') {
          end_block();
        } else {
          back_to_text(c, out);
        }
        return;
      }
      if (!format_.end.empty()) {
        if (c == '{') {  // another call in the same block
          start_object(c, out);
          return;
        }
        end_.reset(format_.end);
        state_ = State::kEnd;
        step(c, out);
        return;
      }
      if (format_.separator != 0 && c == format_.separator) {
        raw_.assign(1, c);
        state_ = State::kOpen;
        return;
      }
      if (format_.separator != 0 && c == '{') {  // calls one per line, as SGLang reads them too
        start_object(c, out);
        return;
      }
      back_to_text(c, out);
      return;
    case State::kEnd:
      switch (end_.step(c)) {
        case LiteralMatch::Step::kMore:
          return;
        case LiteralMatch::Step::kMatched:
          end_block();
          return;
        case LiteralMatch::Step::kMismatch:
          after_broken_call(c, out);
          return;
      }
      return;
    case State::kSkipToEnd: {
      std::string dropped;
      if (skip_scanner_.step(c, dropped) >= 0) end_block();
      return;
    }
  }
}

void JsonToolParser::finish(EventSink& out) {
  switch (state_) {
    case State::kStart:
    case State::kText:
      text(scanner_.take_pending(), out);
      out.content(text_.take_held());
      break;
    case State::kOpen:
    case State::kArrayNext:
    case State::kCompactName:
    case State::kCompactId:
      raw_as_content(out);
      break;
    case State::kObject:
      if (!call_.begun()) raw_as_content(out);
      break;
    case State::kCompactArgs:
      if (!args_.started()) raw_as_content(out);  // else the call keeps the arguments it got
      break;
    case State::kSkipObject:  // a dropped call cut short
      break;
    case State::kAfterObject:
      break;
    case State::kEnd:  // the end literal cut short: dropped with its call's block
    case State::kSkipToEnd:
      break;
  }
  raw_.clear();
}

}  // namespace sgl::function_call
