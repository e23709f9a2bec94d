// NOTE: internal to src/server/*.cpp (it exposes nlohmann::ordered_json). A Messages reply's
// content blocks, from a chat choice's deltas: thinking (the reasoning), text, and a tool_use
// block per tool call, whole (content_blocks) or as the stream's content_block_start / _delta /
// _stop events (BlockStream).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/choice_stream.h"

namespace sgl::server::anthropic {

// A named server-sent event: "event: NAME" and the data line.
std::string sse_event(const char* name, const nlohmann::ordered_json& data);

// The whole reply's blocks: thinking, text (also when no other block came, empty or not), then
// the tool_use blocks in call order. A call whose arguments are not a JSON object (an output cut
// short) has input {}, as SGLang gives; the stop reason then says max_tokens.
nlohmann::ordered_json content_blocks(const ChoiceDelta& total);

// The content block events of a streamed reply. Each piece goes to its block, a block closing
// when another opens, indices counted from 0. A delta holds its pieces by kind, not in the order
// the model wrote them: the arguments that finish the call already open come first, then the
// reasoning and text, then the calls the delta opens (so no argument piece is ever cut off from
// its block; text written after a call in the same delta is shown before that delta's new calls,
// as the whole reply shows all text before the calls).
class BlockStream {
 public:
  // `text_first`: the reply can only be text (no reasoning or tool calls are parsed), so its
  // text block opens with the stream, before any text.
  explicit BlockStream(bool text_first) : text_first_(text_first) {}

  // Right after message_start.
  std::string start();
  std::string add(const ChoiceDelta& d);
  // The reply ended: an empty text block where it made no block at all, and the last block
  // closed.
  std::string finish();
  // Closes the open block, if any (an error ends the stream).
  std::string close();

 private:
  enum class Block : uint8_t { kNone, kThinking, kText, kToolUse };

  std::string open(Block type, nlohmann::ordered_json block);
  std::string open_text();
  std::string delta(nlohmann::ordered_json piece) const;
  std::string arguments(const std::string& json_text) const;

  const bool text_first_;
  Block open_ = Block::kNone;  // the block being streamed
  int index_ = 0;              // its index (the next one's when none is open)
};

}  // namespace sgl::server::anthropic
