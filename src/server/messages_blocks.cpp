// A Messages reply's content blocks (messages_blocks.h).
#include "server/messages_blocks.h"

#include "server/anthropic_content.h"
#include "server/request_json.h"
#include "server/sse.h"

namespace sgl::server::anthropic {
namespace {

using json = nlohmann::ordered_json;

json thinking_block(const std::string& text) {
  return {{"type", "thinking"}, {"thinking", text}, {"signature", ""}};
}

json text_block(const std::string& text) { return {{"type", "text"}, {"text", text}}; }

json tool_use_block(const ToolCallDelta& call, json input) {
  return {{"type", "tool_use"},
          {"id", tool_use_id(call.id)},
          {"name", call.name},
          {"input", std::move(input)}};
}

}  // namespace

std::string sse_event(const char* name, const json& data) {
  return std::string("event: ") + name + "\n" + sse_data(request_json::dump(data));
}

json content_blocks(const ChoiceDelta& total) {
  json content = json::array();
  if (!total.reasoning.empty()) content.push_back(thinking_block(total.reasoning));
  if (!total.text.empty() || (total.reasoning.empty() && total.tool_calls.empty())) {
    content.push_back(text_block(total.text));
  }
  for (const ToolCallDelta& call : total.tool_calls) {
    content.push_back(tool_use_block(call, request_json::arguments_object(call.arguments)));
  }
  return content;
}

std::string BlockStream::open(Block type, json block) {
  std::string out = close();
  open_ = type;
  out += sse_event(
      "content_block_start",
      {{"type", "content_block_start"}, {"index", index_}, {"content_block", std::move(block)}});
  return out;
}

std::string BlockStream::open_text() { return open(Block::kText, text_block("")); }

std::string BlockStream::close() {
  if (open_ == Block::kNone) return {};
  open_ = Block::kNone;
  return sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_++}});
}

std::string BlockStream::delta(json piece) const {
  return sse_event(
      "content_block_delta",
      {{"type", "content_block_delta"}, {"index", index_}, {"delta", std::move(piece)}});
}

std::string BlockStream::arguments(const std::string& json_text) const {
  if (json_text.empty()) return {};
  return delta({{"type", "input_json_delta"}, {"partial_json", json_text}});
}

std::string BlockStream::start() { return text_first_ ? open_text() : std::string(); }

std::string BlockStream::add(const ChoiceDelta& d) {
  std::string out;
  size_t first_new_call = 0;
  // A nameless first entry continues the call open since an earlier delta (append_delta).
  if (!d.tool_calls.empty() && d.tool_calls.front().id.empty()) {
    if (open_ == Block::kToolUse) out += arguments(d.tool_calls.front().arguments);
    first_new_call = 1;
  }
  if (!d.reasoning.empty()) {
    if (open_ != Block::kThinking) out += open(Block::kThinking, thinking_block(""));
    out += delta({{"type", "thinking_delta"}, {"thinking", d.reasoning}});
  }
  if (!d.text.empty()) {
    if (open_ != Block::kText) out += open_text();
    out += delta({{"type", "text_delta"}, {"text", d.text}});
  }
  for (size_t i = first_new_call; i < d.tool_calls.size(); ++i) {
    const ToolCallDelta& call = d.tool_calls[i];
    out += open(Block::kToolUse, tool_use_block(call, json::object()));
    out += arguments(call.arguments);
  }
  return out;
}

std::string BlockStream::finish() {
  std::string out;
  if (index_ == 0 && open_ == Block::kNone) out += open_text();
  return out + close();
}

}  // namespace sgl::server::anthropic
