// Qwen3-Coder's tool calls (SGLang's qwen3_coder; Qwen3.5 writes them too): XML-like markup,
//   <tool_call>
//   <function=NAME>
//   <parameter=P>
//   VALUE
//   </parameter>
//   </function>
//   </tool_call>
// A parameter's value is raw text (one newline after its opening tag and one before its end
// dropped) that ends at </parameter>, the next <parameter= or </function>. It becomes JSON by the
// type the function's parameter schema gives it, as SGLang converts it: strings as they are,
// integers and numbers when they parse (else the text as a string), booleans true exactly for
// "true" (any case), objects and arrays as JSON or else Python literals, "null" (any case) as
// null for every type, parameters the schema does not name as strings. The arguments stream one
// whole parameter at a time. Text outside the calls is content (whitespace next to the markup
// trimmed); text between the tags inside a call is dropped. A call cut short keeps the parameters
// it got, its arguments closed.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>

#include "function_call/function_tools.h"
#include "function_call/stream_parser.h"
#include "function_call/text_scan.h"

namespace sgl::function_call {

// How a parameter's raw text becomes JSON (SGLang's _convert_param_value), by its schema's type.
enum class XmlValueKind : uint8_t { kString, kInteger, kNumber, kBoolean, kJson, kLiteral };

// The kind SGLang infers from a parameter's schema (JSON text of the schema).
XmlValueKind xml_value_kind(std::string_view parameter_schema_json);
// `raw` as the JSON text of `kind`'s conversion.
std::string xml_value_to_json(std::string_view raw, XmlValueKind kind);

// Per function, per parameter its schema names: the value's kind.
using XmlParameterKinds = std::map<std::string, std::map<std::string, XmlValueKind>, std::less<>>;

// The kinds of `tools`' parameters, read from their schemas once per request and shared by its
// choices' parsers.
std::shared_ptr<const XmlParameterKinds> xml_parameter_kinds(std::span<const FunctionTool> tools);

class Qwen3CoderParser final : public ByteParser {
 public:
  // `kinds`: the request's functions' parameters (null: every value a string).
  explicit Qwen3CoderParser(std::shared_ptr<const XmlParameterKinds> kinds);
  void finish(EventSink& out) override;

 private:
  enum class State : uint8_t {
    kText,       // content
    kBlock,      // inside <tool_call>, outside a function
    kName,       // after <function=, until '>'
    kFunction,   // inside a function, between parameters
    kParamName,  // after <parameter=, until '>'
    kValue,      // a parameter's value
  };

  void step(char c, EventSink& out) override;
  void text(std::string_view s, EventSink& out);
  void begin_function(EventSink& out);
  void end_parameter(EventSink& out);
  void end_function(EventSink& out);
  // After a function or block: back to content or the enclosing block.
  void leave_function();

  std::shared_ptr<const XmlParameterKinds> kinds_;
  State state_ = State::kText;
  bool in_block_ = false;
  MarkerScanner text_scanner_;
  MarkerScanner block_scanner_;
  MarkerScanner function_scanner_;
  MarkerScanner value_scanner_;
  TrimmedText text_;
  std::string raw_;  // markup that is not yet a call (content if it never becomes one)
  std::string name_;
  std::string param_;
  std::string value_;
  const std::map<std::string, XmlValueKind>* params_ = nullptr;  // the function's kinds, or none
  bool wrote_param_ = false;
};

}  // namespace sgl::function_call
