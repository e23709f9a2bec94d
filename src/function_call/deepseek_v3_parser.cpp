// DeepSeekV3Parser.
#include "function_call/deepseek_v3_parser.h"

namespace sgl::function_call {
namespace {

constexpr std::string_view kCallsBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kSep = "<｜tool▁sep｜>";
constexpr std::string_view kCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kCallsEnd = "<｜tool▁calls▁end｜>";
constexpr size_t kMaxHeadBytes = 256;

}  // namespace

DeepSeekV3Parser::DeepSeekV3Parser()
    : scanner_({std::string(kCallsBegin), std::string(kCallBegin)}),
      sep_scanner_({std::string(kSep)}) {}

void DeepSeekV3Parser::text(std::string_view s, EventSink& out) {
  std::string t;
  text_.write(s, t);
  out.content(t);
}

void DeepSeekV3Parser::leave(size_t reread, EventSink& out) {
  const std::string again = raw_.substr(raw_.size() - reread);
  raw_.resize(raw_.size() - reread);
  state_ = State::kText;
  if (!raw_.empty()) text(std::exchange(raw_, {}), out);
  for (char c : again) step(c, out);
}

void DeepSeekV3Parser::begin(std::string name, EventSink& out) {
  out.begin_call(std::move(name));
  raw_.clear();
  args_.reset();
  state_ = State::kArgsStart;
}

void DeepSeekV3Parser::start_literal(std::vector<std::string_view> literals) {
  literal_ = LiteralChoice(std::move(literals));
}

void DeepSeekV3Parser::call_ended() {
  raw_.clear();
  text_.skip_leading();
  if (in_block_) {
    state_ = State::kBlock;
    start_literal({kCallBegin, kCallsEnd});
  } else {
    state_ = State::kText;
  }
}

void DeepSeekV3Parser::args_ended() {
  raw_.clear();
  state_ = v31_ ? State::kCallEnd : State::kFenceEnd;
  start_literal({v31_ ? kCallEnd : std::string_view("```")});
}

void DeepSeekV3Parser::step(char c, EventSink& out) {
  switch (state_) {
    case State::kText: {
      std::string t;
      const int marker = scanner_.step(c, t);
      text(t, out);
      if (marker < 0) return;
      raw_ = text_.take_held() + (marker == 0 ? std::string(kCallsBegin) : std::string(kCallBegin));
      in_block_ = marker == 0;
      if (in_block_) {
        state_ = State::kBlock;
        start_literal({kCallBegin, kCallsEnd});
      } else {
        state_ = State::kHead;
        head_.clear();
      }
      return;
    }
    case State::kBlock: {
      raw_ += c;
      if (literal_.read().empty() && is_json_space(c)) return;
      const int m = literal_.step(c);
      if (m == LiteralChoice::kMore) return;
      if (m == LiteralChoice::kMismatch) {
        leave(literal_.read().size(), out);
      } else if (m == 0) {
        state_ = State::kHead;
        head_.clear();
      } else {
        raw_.clear();
        state_ = State::kText;
        text_.skip_leading();
      }
      return;
    }
    case State::kHead: {
      raw_ += c;
      std::string t;
      const int sep = sep_scanner_.step(c, t);
      head_ += t;
      if (head_.size() > kMaxHeadBytes) {
        head_ += sep_scanner_.take_pending();
        leave(head_.size(), out);
        return;
      }
      if (sep < 0) return;
      if (head_ == "function") {
        v31_ = false;
        name_.clear();
        state_ = State::kName;
      } else if (!head_.empty()) {
        v31_ = true;
        begin(head_, out);
      } else {
        leave(kSep.size(), out);
      }
      return;
    }
    case State::kName:
      raw_ += c;
      if (c != '\n') {
        name_ += c;
        if (name_.size() > kMaxHeadBytes) leave(name_.size(), out);
        return;
      }
      if (name_.empty()) {
        leave(1, out);
        return;
      }
      state_ = State::kFence;
      start_literal({"```json"});
      return;
    case State::kFence: {
      raw_ += c;
      const int m = literal_.step(c);
      if (m == LiteralChoice::kMismatch) leave(literal_.read().size(), out);
      if (m == 0) begin(name_, out);
      return;
    }
    case State::kArgsStart:
      if (is_json_space(c)) return;
      state_ = State::kArgs;
      [[fallthrough]];
    case State::kArgs:
      switch (stream_arguments(args_, c, out)) {
        case JsonScanner::Step::kMore:
          return;
        case JsonScanner::Step::kComplete:
          args_ended();
          return;
        case JsonScanner::Step::kCompleteBefore:
          args_ended();
          step(c, out);
          return;
        case JsonScanner::Step::kError:
          raw_.assign(1, c);
          leave(1, out);
          return;
      }
      return;
    case State::kFenceEnd:
    case State::kCallEnd: {
      if (literal_.read().empty() && is_json_space(c)) return;
      raw_ += c;
      const int m = literal_.step(c);
      if (m == LiteralChoice::kMore) return;
      if (m == LiteralChoice::kMismatch) {
        leave(literal_.read().size(), out);
      } else if (state_ == State::kFenceEnd) {
        raw_.clear();
        state_ = State::kCallEnd;
        start_literal({kCallEnd});
      } else {
        call_ended();
      }
      return;
    }
  }
}

void DeepSeekV3Parser::finish(EventSink& out) {
  switch (state_) {
    case State::kText:
      text(scanner_.take_pending(), out);
      out.content(text_.take_held());
      break;
    case State::kBlock:
    case State::kHead:
    case State::kName:
    case State::kFence:
      out.content(raw_);
      break;
    default:
      break;  // inside or after a call: it keeps what it got
  }
  raw_.clear();
}

}  // namespace sgl::function_call
