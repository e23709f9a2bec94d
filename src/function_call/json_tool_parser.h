// The tool-call formats whose calls are JSON objects {"name": ..., "arguments": ...} after a
// marker: qwen25 (`<tool_call>\n{...}\n</tool_call>`, hermes style), llama3 (`<|python_tag|>`
// or a bare object at the start, calls separated by ';' or whitespace, "parameters" for the
// arguments) and mistral (`[TOOL_CALLS] [{...}, {...}]`, and the compact
// `[TOOL_CALLS]NAME[ARGS]{...}` of newer Mistral templates, `[CALL_ID]ID` before `[ARGS]`
// allowed, each call behind its own marker). Text around the calls is content, whitespace next
// to the markup trimmed. Markup that turns out not to be a call before its name was read is
// content; a call whose name was read stays a call (its arguments as far as they came). A call
// after a marker that names a function the request did not offer is dropped, markup and
// arguments, and the calls after it in the block are read (SGLang's detectors skip it); a bare
// object at the start naming one stays content (llama3's JSON answer). Where
// calls end with a literal (qwen25's </tool_call>), a block may hold several call objects, and
// the rest of a block whose JSON breaks is dropped up to that literal rather than shown as
// content (SGLang skips such blocks). json_array is no model's format but the one tool_choice
// required / named holds calls to where a grammar cannot write the parser's own (SGLang's
// JSON-schema fallback): a bare array [{"name": ..., "parameters": {...}}, ...] (or one object)
// from the output's start.
#pragma once

#include <string>

#include "function_call/json_call_reader.h"
#include "function_call/json_scanner.h"
#include "function_call/stream_parser.h"
#include "function_call/text_scan.h"

namespace sgl::function_call {

struct JsonToolFormat {
  std::string start;           // the marker before the calls; empty: none (bare_at_start only)
  std::string end;             // a literal after each call (qwen25's </tool_call>); may be empty
  bool array = false;          // calls as a JSON array after the marker (mistral)
  char separator = 0;          // between calls, without another marker (llama3: ';' or none)
  bool bare_at_start = false;  // an output starting with '{' (or '[' with array) starts calls
  bool compact = false;        // NAME[ARGS]{...} after the marker (mistral)
  // The marker is a special token of the model (llama3's <|python_tag|>): never content, also
  // where what follows is not a call (Llama 3.1's built-in tools' Python).
  bool special_start = false;
};

JsonToolFormat qwen25_format();
JsonToolFormat llama3_format();
JsonToolFormat mistral_format();
JsonToolFormat json_array_format();

class JsonToolParser final : public ByteParser {
 public:
  // `names`: the functions a call may name (JsonCallReader); null: any.
  explicit JsonToolParser(JsonToolFormat format, std::shared_ptr<const ToolNames> names = nullptr);
  void finish(EventSink& out) override;

 private:
  enum class State : uint8_t {
    kStart,        // bare_at_start: nothing but whitespace yet
    kText,         // content
    kOpen,         // after the marker (or a separator): '{' (or '[' for an array) expected
    kArrayNext,    // inside the array, before an element
    kObject,       // inside a call object
    kAfterObject,  // after a call object
    kEnd,          // matching the end literal
    kCompactName,  // compact: the name, up to [ARGS] (or [CALL_ID])
    kCompactId,    // compact: the call id, up to [ARGS]
    kCompactArgs,  // compact: the arguments' JSON value
    kSkipToEnd,    // a broken call: dropped up to the end literal
    kSkipObject,   // a call to a function not offered: dropped up to its closing '}'
  };

  void step(char c, EventSink& out) override;
  void text(std::string_view s, EventSink& out);
  void start_object(char c, EventSink& out);
  // Not a call after all: the markup read so far is content; `c` is read again as text.
  void fall_back(char c, EventSink& out);
  // At the end of the output: the markup read so far is content.
  void raw_as_content(EventSink& out);
  // Back to text after a call; `c` is read again as text.
  void back_to_text(char c, EventSink& out);
  // The array's ']' ended the calls.
  void end_block();
  // A call's JSON broke at `c`: with an end literal, skip to it; else back to text.
  void after_broken_call(char c, EventSink& out);

  JsonToolFormat format_;
  MarkerScanner scanner_;
  TrimmedText text_;
  State state_;
  JsonCallReader call_;
  LiteralMatch end_;
  MarkerScanner skip_scanner_;  // kSkipToEnd: finds the end literal
  std::string raw_;             // the markup since the last certain point, for fall_back
  std::string name_;            // compact: the function's name
  LiteralChoice tag_;           // compact: the [ARGS] or [CALL_ID] after the name (or the id)
  JsonScanner args_;            // compact: the arguments' syntax
  JsonScanner skipped_;         // kSkipObject: the dropped object's syntax
  bool in_array_ = false;
  bool block_has_call_ = false;  // the array holds a finished call
  bool after_marker_ = false;    // the calls being read follow a marker (not a bare object)
  size_t object_at_ = 0;         // where the current call object starts in raw_
  bool dropping_args_ = false;   // compact: the arguments of a call to a function not offered
};

}  // namespace sgl::function_call
