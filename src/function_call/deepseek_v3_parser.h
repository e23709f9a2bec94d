// DeepSeek-V3's tool-call format:
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
//   ```json
//   {...}
//   ```<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
// and V3.1's shorter call, <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>,
// told apart by the text before the separator. Text before and after the calls is content.
#pragma once

#include <string>

#include "function_call/json_scanner.h"
#include "function_call/stream_parser.h"
#include "function_call/text_scan.h"

namespace sgl::function_call {

class DeepSeekV3Parser final : public ByteParser {
 public:
  DeepSeekV3Parser();
  void finish(EventSink& out) override;

 private:
  enum class State : uint8_t {
    kText,
    kBlock,      // inside the calls block, between calls
    kHead,       // after the call's begin marker, up to the separator
    kName,       // V3: the name, up to the newline
    kFence,      // V3: ```json
    kArgsStart,  // whitespace before the arguments
    kArgs,       // the arguments' JSON
    kFenceEnd,   // V3: ``` after the arguments
    kCallEnd,    // the call's end marker
  };

  void step(char c, EventSink& out) override;
  void text(std::string_view s, EventSink& out);
  // Leaves the markup: raw_ (but its last `reread` bytes) is content, and those bytes are read
  // again as text.
  void leave(size_t reread, EventSink& out);
  void begin(std::string name, EventSink& out);
  void start_literal(std::vector<std::string_view> literals);
  void args_ended();
  void call_ended();

  MarkerScanner scanner_;
  MarkerScanner sep_scanner_;
  TrimmedText text_;
  State state_ = State::kText;
  LiteralChoice literal_;
  JsonScanner args_;
  std::string raw_;  // markup since the last finished call (or the block's start)
  std::string head_;
  std::string name_;
  bool in_block_ = false;
  bool v31_ = false;
};

}  // namespace sgl::function_call
