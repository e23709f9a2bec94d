// Parser names and the reasoning -> tool-call chain.
#include "function_call/output_parser.h"

#include <algorithm>
#include <array>

#include "core/check.h"
#include "function_call/deepseek_v3_parser.h"
#include "function_call/harmony_parser.h"
#include "function_call/json_tool_parser.h"
#include "function_call/pythonic_parser.h"
#include "function_call/qwen3_coder_parser.h"
#include "function_call/think_parser.h"

namespace sgl::function_call {
namespace {

struct NamedToolCallFormat {
  std::string_view name;
  ToolCallFormat format;
};
constexpr std::array<NamedToolCallFormat, 10> kToolCallFormats = {{
    {"qwen25", ToolCallFormat::kHermes},
    {"qwen", ToolCallFormat::kHermes},
    {"hermes", ToolCallFormat::kHermes},
    {"qwen3_coder", ToolCallFormat::kQwen3Coder},
    {"llama3", ToolCallFormat::kLlama3},
    {"mistral", ToolCallFormat::kMistral},
    {"pythonic", ToolCallFormat::kPythonic},
    {"deepseekv3", ToolCallFormat::kDeepSeekV3},
    {"deepseekv31", ToolCallFormat::kDeepSeekV31},
    {"gpt-oss", ToolCallFormat::kGptOss},
}};
constexpr std::array<std::string_view, kToolCallFormats.size()> kToolCallParsers = [] {
  std::array<std::string_view, kToolCallFormats.size()> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kToolCallFormats[i].name;
  return names;
}();

// What a --reasoning-parser name asks for.
struct ReasoningFormat {
  std::string_view name;
  std::optional<ThinkTags> tags;  // nullopt: reasoning in harmony's analysis channel (gpt-oss)
  bool starts_inside = false;     // the output always starts inside the reasoning
  bool special_tokens = false;    // its markers are special tokens
};
constexpr std::array<ReasoningFormat, 5> kReasoningFormats = {{
    {"qwen3", kQwen3ThinkTags},
    {"qwen3-thinking", kQwen3ThinkTags, /*starts_inside=*/true},
    {"deepseek-r1", kThinkTags, /*starts_inside=*/true},
    {"mistral", kMistralThinkTags, false, /*special_tokens=*/true},
    {"gpt-oss", std::nullopt, false, /*special_tokens=*/true},
}};
constexpr std::array<std::string_view, kReasoningFormats.size()> kReasoningParsers = [] {
  std::array<std::string_view, kReasoningFormats.size()> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kReasoningFormats[i].name;
  return names;
}();

// The format of a --reasoning-parser name; null for an unknown one.
const ReasoningFormat* reasoning_format(std::string_view name) {
  for (const ReasoningFormat& f : kReasoningFormats) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Status check_name(std::string_view flag, std::string_view name,
                  std::span<const std::string_view> names) {
  if (std::find(names.begin(), names.end(), name) != names.end()) return Status::ok_status();
  std::string known;
  for (std::string_view n : names) known += (known.empty() ? "" : ", ") + std::string(n);
  return invalid_argument(std::string(flag) + " '" + std::string(name) + "' is not known (" +
                          known + ")");
}

// Drops the calls to functions the request did not offer, with their arguments (SGLang's
// detectors skip them), for the parsers that do not check names as they read (the JSON formats
// do: such a call stays content there).
class KnownCallsOnly final : public StreamParser {
 public:
  KnownCallsOnly(std::unique_ptr<StreamParser> inner, std::shared_ptr<const ToolNames> names)
      : inner_(std::move(inner)), names_(std::move(names)) {}

  void feed(std::string_view text, EventSink& out) override {
    EventSink mid;
    inner_->feed(text, mid);
    forward(mid, out);
  }
  void finish(EventSink& out) override {
    EventSink mid;
    inner_->finish(mid);
    forward(mid, out);
  }

 private:
  void forward(EventSink& mid, EventSink& out) {
    for (ParseEvent& e : mid.take()) {
      switch (e.kind) {
        case EventKind::kContent:
          out.content(e.text);
          break;
        case EventKind::kReasoning:
          out.reasoning(e.text);
          break;
        case EventKind::kToolCallBegin:
          dropping_ = !names_allow(names_.get(), e.text);
          if (!dropping_) out.begin_call(std::move(e.text));
          break;
        case EventKind::kToolCallArguments:
          if (!dropping_) out.arguments(e.text);
          break;
      }
    }
  }

  std::unique_ptr<StreamParser> inner_;
  std::shared_ptr<const ToolNames> names_;
  bool dropping_ = false;  // the current call names an unknown function
};

std::unique_ptr<StreamParser> known_calls_only(std::unique_ptr<StreamParser> parser,
                                               std::shared_ptr<const ToolNames> names) {
  if (names == nullptr) return parser;
  return std::make_unique<KnownCallsOnly>(std::move(parser), std::move(names));
}

// (gpt-oss's harmony parser reads reasoning and calls together: make_output_parser.)
std::unique_ptr<StreamParser> tool_call_parser(ToolCallFormat format,
                                               const OutputParserOptions& options) {
  switch (format) {
    case ToolCallFormat::kHermes:
      return std::make_unique<JsonToolParser>(qwen25_format(), options.tool_names);
    case ToolCallFormat::kQwen3Coder:
      return std::make_unique<Qwen3CoderParser>(options.xml_parameter_kinds);
    case ToolCallFormat::kLlama3:
      return std::make_unique<JsonToolParser>(llama3_format(), options.tool_names);
    case ToolCallFormat::kMistral:
      return std::make_unique<JsonToolParser>(mistral_format(), options.tool_names);
    case ToolCallFormat::kPythonic:
      return known_calls_only(std::make_unique<PythonicParser>(), options.tool_names);
    case ToolCallFormat::kDeepSeekV3:
    case ToolCallFormat::kDeepSeekV31:  // one parser reads both
      return known_calls_only(std::make_unique<DeepSeekV3Parser>(), options.tool_names);
    case ToolCallFormat::kJsonArray:
      return std::make_unique<JsonToolParser>(json_array_format(), options.tool_names);
    case ToolCallFormat::kGptOss:
      break;
  }
  SGL_CHECK(false) << "gpt-oss's calls are read by the harmony parser (make_output_parser)";
  return nullptr;
}

// Reasoning first; its content goes through the tool-call parser. Reasoning events are dropped
// when no reasoning parser was asked for (gpt-oss's analysis channel, as SGLang's tool parser).
class ChainedParser final : public StreamParser {
 public:
  ChainedParser(std::unique_ptr<StreamParser> first, std::unique_ptr<StreamParser> tools,
                bool keep_reasoning)
      : first_(std::move(first)), tools_(std::move(tools)), keep_reasoning_(keep_reasoning) {}

  void feed(std::string_view text, EventSink& out) override {
    if (!first_) {
      tools_->feed(text, out);
      return;
    }
    EventSink mid;
    first_->feed(text, mid);
    forward(mid, out);
  }

  void finish(EventSink& out) override {
    if (first_) {
      EventSink mid;
      first_->finish(mid);
      forward(mid, out);
    }
    if (tools_) tools_->finish(out);
  }

 private:
  void forward(EventSink& mid, EventSink& out) {
    for (ParseEvent& e : mid.take()) {
      switch (e.kind) {
        case EventKind::kContent:
          if (tools_) {
            tools_->feed(e.text, out);
          } else {
            out.content(e.text);
          }
          break;
        case EventKind::kReasoning:
          if (keep_reasoning_) out.reasoning(e.text);
          break;
        case EventKind::kToolCallBegin:
          out.begin_call(std::move(e.text));
          break;
        case EventKind::kToolCallArguments:
          out.arguments(e.text);
          break;
      }
    }
  }

  std::unique_ptr<StreamParser> first_;  // reasoning (or harmony, which does both)
  std::unique_ptr<StreamParser> tools_;
  bool keep_reasoning_;
};

}  // namespace

std::span<const std::string_view> tool_call_parser_names() { return kToolCallParsers; }

std::optional<ToolCallFormat> tool_call_format(std::string_view name) {
  if (name == kJsonArrayToolCalls) return ToolCallFormat::kJsonArray;
  for (const NamedToolCallFormat& f : kToolCallFormats) {
    if (f.name == name) return f.format;
  }
  return std::nullopt;
}
std::span<const std::string_view> reasoning_parser_names() { return kReasoningParsers; }

Status check_tool_call_parser(std::string_view name) {
  return check_name("--tool-call-parser", name, kToolCallParsers);
}
Status check_reasoning_parser(std::string_view name) {
  return check_name("--reasoning-parser", name, kReasoningParsers);
}

bool needs_special_tokens(const OutputParserOptions& options) {
  const ReasoningFormat* reasoning = reasoning_format(options.reasoning_parser);
  return tool_call_format(options.tool_call_parser).has_value() ||
         (reasoning != nullptr && reasoning->special_tokens);
}

bool starts_in_reasoning(const OutputParserOptions& options) {
  const ReasoningFormat* reasoning = reasoning_format(options.reasoning_parser);
  return options.force_reasoning || (reasoning != nullptr && reasoning->starts_inside);
}

std::optional<ThinkTags> think_tags(std::string_view reasoning_parser) {
  const ReasoningFormat* reasoning = reasoning_format(reasoning_parser);
  return reasoning != nullptr ? reasoning->tags : std::nullopt;
}

Result<std::unique_ptr<StreamParser>> make_output_parser(const OutputParserOptions& options) {
  const std::string& tools = options.tool_call_parser;
  const std::string& reasoning = options.reasoning_parser;
  std::optional<ToolCallFormat> format;
  if (!tools.empty()) {
    format = tool_call_format(tools);
    if (!format) return check_tool_call_parser(tools);  // the known names
  }
  const ReasoningFormat* reasoning_fmt = nullptr;
  if (!reasoning.empty()) {
    reasoning_fmt = reasoning_format(reasoning);
    if (reasoning_fmt == nullptr) return check_reasoning_parser(reasoning);  // the known names
  }
  if (tools.empty() && reasoning.empty()) return std::unique_ptr<StreamParser>();
  const bool keep_reasoning = !reasoning.empty();
  const bool harmony_calls = format == ToolCallFormat::kGptOss;
  if (harmony_calls || (reasoning_fmt != nullptr && !reasoning_fmt->tags)) {
    // One harmony parser does both; calls only when tool calls are parsed with it.
    std::unique_ptr<StreamParser> harmony = std::make_unique<HarmonyParser>(harmony_calls);
    if (harmony_calls) harmony = known_calls_only(std::move(harmony), options.tool_names);
    return std::unique_ptr<StreamParser>(
        std::make_unique<ChainedParser>(std::move(harmony), nullptr, keep_reasoning));
  }
  std::unique_ptr<StreamParser> first;
  if (reasoning_fmt != nullptr) {
    first = std::make_unique<ThinkParser>(starts_in_reasoning(options), *reasoning_fmt->tags);
  }
  return std::unique_ptr<StreamParser>(std::make_unique<ChainedParser>(
      std::move(first), format ? tool_call_parser(*format, options) : nullptr, keep_reasoning));
}

ParsedOutput parse_whole(StreamParser& parser, std::string_view text) {
  EventSink sink;
  parser.feed(text, sink);
  parser.finish(sink);
  return fold(sink.take());
}

}  // namespace sgl::function_call
