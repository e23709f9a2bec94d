// SGLang's native text parsers: POST /parse_function_call (a text's tool calls in a
// --tool-call-parser format) and POST /separate_reasoning (its reasoning in a --reasoning-parser
// format), each naming its parser in the request, as the chat routes' parsers read a whole
// output. On the work pool, the text's length bounded as a prompt's.
#include <algorithm>
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "function_call/function_tools.h"
#include "function_call/output_parser.h"
#include "server/engine_request.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using request_json::field_error;
using request_json::find;

// The body's fields, each one of `known`, and its text within the prompt length bound.
Result<json> read_body(const ServerContext& ctx, const HttpRequest& request,
                       std::initializer_list<std::string_view> known) {
  SGL_ASSIGN_OR_RETURN(json o, request_json::parse_object(request.body));
  SGL_RETURN_IF_ERROR(request_json::check_fields(o, known));
  const json* text = find(o, "text");
  if (!text || !text->is_string()) return field_error("text", "must be a string");
  SGL_RETURN_IF_ERROR(check_text_length(ctx, text->get_ref<const std::string&>().size(), "text"));
  return o;
}

// The events of `options`' parser over the whole `text`, in order (adjacent pieces merged).
Result<std::vector<function_call::ParseEvent>> parse_events(
    const function_call::OutputParserOptions& options, const std::string& text) {
  SGL_ASSIGN_OR_RETURN(std::unique_ptr<function_call::StreamParser> parser,
                       function_call::make_output_parser(options));
  function_call::EventSink sink;
  parser->feed(text, sink);
  parser->finish(sink);
  return sink.take();
}

// Runs `work` (which makes the reply body or an error) on the work pool.
template <typename Work>
Reply on_pool(ServerContext& ctx, Work work) {
  return PreparedReply::submit(ctx, false, [work = std::move(work)](const std::atomic<bool>&) {
    Result<json> body = work();
    if (!body.ok()) return Reply::of(error_response(body.status()));
    return Reply::of(request_json::json_response(*body));
  });
}

}  // namespace

// {text, tools, tool_call_parser} -> {normal_text, calls: [{tool_index, name, parameters}]}:
// tool_index is the function's position in `tools` (SGLang's), parameters the arguments' JSON
// as written.
Reply handle_parse_function_call(ServerContext& ctx, const HttpRequest& request) {
  auto o = read_body(ctx, request, {"text", "tools", "tool_call_parser"});
  if (!o.ok()) return Reply::of(error_response(o.status()));
  const json* name = find(*o, "tool_call_parser");
  if (!name || !name->is_string()) {
    return Reply::of(error_response(field_error("tool_call_parser", "must be a string")));
  }
  if (Status s = function_call::check_tool_call_parser(name->get<std::string>()); !s.ok()) {
    return Reply::of(error_response(s));
  }
  std::vector<function_call::FunctionTool> tools;
  if (const json* given = find(*o, "tools")) {
    auto read = function_call::read_function_tools(request_json::dump(*given));
    if (!read.ok()) return Reply::of(error_response(read.status()));
    tools = std::move(read).value();
  }
  auto body = std::make_shared<const json>(std::move(o).value());
  return on_pool(ctx, [body, tools = std::move(tools)]() -> Result<json> {
    function_call::OutputParserOptions options;
    options.tool_call_parser = (*body)["tool_call_parser"].get<std::string>();
    options.tool_names = function_call::tool_names(tools);
    options.xml_parameter_kinds = function_call::xml_parameter_kinds(tools);
    SGL_ASSIGN_OR_RETURN(const auto events,
                         parse_events(options, (*body)["text"].get<std::string>()));
    const function_call::ParsedOutput parsed = function_call::fold(events);
    json calls = json::array();
    for (const function_call::ToolCall& call : parsed.calls) {
      const auto tool = std::find_if(tools.begin(), tools.end(),
                                     [&](const auto& t) { return t.name == call.name; });
      calls.push_back({{"tool_index", tool == tools.end() ? -1 : tool - tools.begin()},
                       {"name", call.name},
                       {"parameters", call.arguments}});
    }
    return json{{"normal_text", parsed.content}, {"calls", std::move(calls)}};
  });
}

// {text, reasoning_parser, return_blocks} -> {reasoning_text, text}; with return_blocks also
// the text's pieces in order: blocks [{type: reasoning | text, text}], and the texts of each
// kind (reasoning_blocks, text_blocks).
Reply handle_separate_reasoning(ServerContext& ctx, const HttpRequest& request) {
  auto o = read_body(ctx, request, {"text", "reasoning_parser", "return_blocks"});
  if (!o.ok()) return Reply::of(error_response(o.status()));
  const json* name = find(*o, "reasoning_parser");
  if (!name || !name->is_string()) {
    return Reply::of(error_response(field_error("reasoning_parser", "must be a string")));
  }
  if (Status s = function_call::check_reasoning_parser(name->get<std::string>()); !s.ok()) {
    return Reply::of(error_response(s));
  }
  bool blocks = false;
  if (Status s = request_json::read(*o, "return_blocks", blocks); !s.ok()) {
    return Reply::of(error_response(s));
  }
  auto body = std::make_shared<const json>(std::move(o).value());
  return on_pool(ctx, [body, blocks]() -> Result<json> {
    function_call::OutputParserOptions options;
    options.reasoning_parser = (*body)["reasoning_parser"].get<std::string>();
    SGL_ASSIGN_OR_RETURN(const auto events,
                         parse_events(options, (*body)["text"].get<std::string>()));
    const function_call::ParsedOutput parsed = function_call::fold(events);
    json reply = {{"reasoning_text", parsed.reasoning}, {"text", parsed.content}};
    if (!blocks) return reply;
    json all = json::array(), reasoning = json::array(), text = json::array();
    for (const function_call::ParseEvent& e : events) {
      const bool thinking = e.kind == function_call::EventKind::kReasoning;
      (thinking ? reasoning : text).push_back(e.text);
      all.push_back({{"type", thinking ? "reasoning" : "text"}, {"text", e.text}});
    }
    if (all.empty() || all.back()["type"] != "text") {  // SGLang's blocks end with the text
      text.push_back("");
      all.push_back({{"type", "text"}, {"text", ""}});
    }
    reply["reasoning_blocks"] = std::move(reasoning);
    reply["text_blocks"] = std::move(text);
    reply["blocks"] = std::move(all);
    return reply;
  });
}

}  // namespace sgl::server
