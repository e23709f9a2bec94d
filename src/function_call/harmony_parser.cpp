// HarmonyParser.
#include "function_call/harmony_parser.h"

namespace sgl::function_call {
namespace {

constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kConstrain = "<|constrain|>";
constexpr std::string_view kEnd = "<|end|>";
constexpr std::string_view kCall = "<|call|>";
constexpr std::string_view kReturn = "<|return|>";
constexpr size_t kMaxHeaderBytes = 512;

// The word after `key` in `header` (up to whitespace or a marker); empty if absent.
std::string word_after(std::string_view header, std::string_view key) {
  const size_t at = header.find(key);
  if (at == std::string_view::npos) return {};
  size_t end = at + key.size();
  while (end < header.size() && !is_json_space(header[end]) && header[end] != '<') ++end;
  return std::string(header.substr(at + key.size(), end - at - key.size()));
}

}  // namespace

HarmonyParser::HarmonyParser(bool parse_calls)
    : parse_calls_(parse_calls),
      body_scanner_({std::string(kStart), std::string(kChannel), std::string(kMessage),
                     std::string(kEnd), std::string(kCall), std::string(kReturn)}),
      header_scanner_({std::string(kMessage), std::string(kChannel), std::string(kConstrain),
                       std::string(kStart)}) {}

void HarmonyParser::body_text(std::string_view s, EventSink& out) {
  switch (body_) {
    case Body::kContent:
      out.content(s);
      break;
    case Body::kReasoning:
      out.reasoning(s);
      break;
    case Body::kCall:
      out.arguments(s);
      call_args_ = call_args_ || !s.empty();
      break;
  }
}

void HarmonyParser::start_body(EventSink& out) {
  in_header_ = false;
  std::string recipient = word_after(header_, "to=");
  const std::string channel = word_after(header_, kChannel);
  if (!recipient.empty() && parse_calls_) {
    if (recipient.starts_with("functions.")) recipient.erase(0, 10);
    out.begin_call(recipient);
    body_ = Body::kCall;
    call_args_ = false;
  } else {
    body_ = channel == "analysis" ? Body::kReasoning : Body::kContent;
  }
  header_.clear();
}

void HarmonyParser::step(char c, EventSink& out) {
  std::string t;
  if (in_header_) {
    const int m = header_scanner_.step(c, t);
    header_ += t;
    if (m == 0) {
      start_body(out);
      return;
    }
    if (m > 0) header_ += std::string(m == 1 ? kChannel : m == 2 ? kConstrain : kStart);
    if (header_.size() > kMaxHeaderBytes) {  // not a header: its text is content
      in_header_ = false;
      body_ = Body::kContent;
      out.content(std::exchange(header_, {}) + header_scanner_.take_pending());
    }
    return;
  }
  const int m = body_scanner_.step(c, t);
  body_text(t, out);
  if (m < 0) return;
  const std::string_view marker = m == 0   ? kStart
                                  : m == 1 ? kChannel
                                  : m == 2 ? kMessage
                                           : kEnd;  // end, call, return: the same
  if (marker == kStart || marker == kChannel) {
    end_body(out);
    in_header_ = true;
    header_ = marker == kChannel ? std::string(kChannel) : std::string();
  } else if (marker != kMessage) {
    end_body(out);  // the message ended (end / call / return)
  }
}

void HarmonyParser::end_body(EventSink& out) {
  if (body_ == Body::kCall && !call_args_) out.arguments("{}");
  body_ = Body::kContent;
}

void HarmonyParser::finish(EventSink& out) {
  if (in_header_) {
    out.content(std::exchange(header_, {}) + header_scanner_.take_pending());
  } else {
    body_text(body_scanner_.take_pending(), out);
    end_body(out);
  }
}

}  // namespace sgl::function_call
