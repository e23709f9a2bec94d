// Qwen3CoderParser and the conversion of its parameter values.
#include "function_call/qwen3_coder_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "core/ascii.h"
#include "core/ordered_json.h"
#include "function_call/python_literal.h"

namespace sgl::function_call {
namespace {

using json = nlohmann::ordered_json;  // an object value keeps its keys' order, as json.loads

constexpr std::string_view kToolCall = "<tool_call>";
constexpr std::string_view kToolCallEnd = "</tool_call>";
constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr std::string_view kParameter = "<parameter=";
constexpr std::string_view kParameterEnd = "</parameter>";
// A longer function or parameter name is not markup.
constexpr size_t kMaxNameBytes = 512;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string json_string(std::string_view s) {
  return json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
}

// JSON text as Python's json.dumps writes it (", " and ": " separators, UTF-8 as is).
void dump_python_style(const json& v, std::string& out) {
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [key, item] : v.items()) {
      if (!first) out += ", ";
      first = false;
      out += json_string(key);
      out += ": ";
      dump_python_style(item, out);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out += ", ";
      dump_python_style(v[i], out);
    }
    out += ']';
  } else {
    out += v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

// Digits with single underscores between them (Python's numeric literal digits), without the
// underscores; nullopt if `s` is not that.
std::optional<std::string> python_digits(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() &&
        std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
    out += s[i];
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// Python's int(s) as JSON: optional sign, digits (leading zeros dropped).
std::optional<std::string> python_int(std::string_view raw) {
  std::string_view s = trim(raw);
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  std::optional<std::string> digits = python_digits(s);
  if (!digits) return std::nullopt;
  const size_t first = digits->find_first_not_of('0');
  if (first == std::string::npos) return "0";
  return (negative ? "-" : "") + digits->substr(first);
}

// Python's float(s) as JSON: the shortest text that reads back as the same double, ".0" added
// to an integral one as Python's repr writes it (the exponent forms may differ from repr's:
// 1e-04 for 0.0001); an integer literal stays an integer (SGLang turns "3" into 3, not 3.0);
// nullopt for what float() refuses and for infinities and NaN (not JSON).
std::optional<std::string> python_float(std::string_view raw) {
  if (raw.find_first_of(".eE") == std::string_view::npos) return python_int(raw);
  std::string_view s = trim(raw);
  std::string text;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    if (s.front() == '-') text += '-';
    s.remove_prefix(1);
  }
  // mantissa [e[sign]digits]; the mantissa digits[.digits] or .digits, with underscores.
  const size_t e = s.find_first_of("eE");
  const std::string_view mantissa = s.substr(0, e);
  const size_t dot = mantissa.find('.');
  const std::string_view whole = mantissa.substr(0, dot);
  const std::string_view fraction =
      dot == std::string_view::npos ? std::string_view() : mantissa.substr(dot + 1);
  const std::optional<std::string> w = whole.empty() ? std::string() : python_digits(whole);
  const std::optional<std::string> f = fraction.empty() ? std::string() : python_digits(fraction);
  if (!w || !f || (w->empty() && f->empty())) return std::nullopt;
  text += (w->empty() ? "0" : *w) + "." + (f->empty() ? "0" : *f);
  if (e != std::string_view::npos) {
    std::string_view exponent = s.substr(e + 1);
    text += 'e';
    if (!exponent.empty() && (exponent.front() == '+' || exponent.front() == '-')) {
      text += exponent.front();
      exponent.remove_prefix(1);
    }
    const std::optional<std::string> x = python_digits(exponent);
    if (!x) return std::nullopt;
    text += *x;
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  char buf[64];
  const auto written = std::to_chars(buf, buf + sizeof(buf), value);
  std::string out(buf, written.ptr);
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

// Python's ast.literal_eval of `raw` as JSON (the literals PythonLiteralToJson reads).
std::optional<std::string> python_literal(std::string_view raw) {
  const std::string s = std::string(trim(raw)) + ' ';
  PythonLiteralToJson literal;
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    size_t rest = 0;
    switch (literal.step(s[i], out)) {
      case PythonLiteralToJson::Step::kMore:
        continue;
      case PythonLiteralToJson::Step::kError:
        return std::nullopt;
      case PythonLiteralToJson::Step::kComplete:
        rest = i + 1;
        break;
      case PythonLiteralToJson::Step::kCompleteBefore:
        rest = i;
        break;
    }
    return trim(std::string_view(s).substr(rest)).empty() ? std::optional(out) : std::nullopt;
  }
  return std::nullopt;
}

// SGLang's infer_type_from_json_schema: the schema's primary type; empty when it has none.
std::string infer_type(const json& schema) {
  if (!schema.is_object()) return "";
  if (const auto t = schema.find("type"); t != schema.end()) {
    if (t->is_string()) return t->get<std::string>();
    if (t->is_array() && !t->empty()) {
      for (const json& v : *t) {
        if (!(v.is_string() && v == "null")) return v.is_string() ? v.get<std::string>() : "";
      }
      return "string";
    }
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    const auto branches = schema.find(key);
    if (branches == schema.end() || !branches->is_array()) continue;
    std::vector<std::string> types;
    for (const json& b : *branches) {
      if (std::string t = infer_type(b); !t.empty()) types.push_back(std::move(t));
    }
    if (types.empty()) break;
    const auto all_are = [&](const std::string& t) {
      return std::all_of(types.begin(), types.end(), [&](const std::string& x) { return x == t; });
    };
    if (all_are(types[0])) return types[0];
    std::vector<std::string> non_null;
    for (const std::string& t : types) {
      if (t != "null" && std::find(non_null.begin(), non_null.end(), t) == non_null.end()) {
        non_null.push_back(t);
      }
    }
    const bool has_null = std::find(types.begin(), types.end(), "null") != types.end();
    if (has_null && non_null.size() == 1) return non_null[0];
    if (std::find(types.begin(), types.end(), "string") != types.end()) return "string";
    return types[0];
  }
  if (const auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
    std::vector<std::string> kinds;
    for (const json& v : *e) {
      std::string k = v.is_null()             ? "null"
                      : v.is_boolean()        ? "boolean"
                      : v.is_number_integer() ? "integer"
                      : v.is_number()         ? "number"
                      : v.is_string()         ? "string"
                      : v.is_array()          ? "array"
                                              : "object";
      if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(std::move(k));
    }
    return kinds.size() == 1 ? kinds[0] : "string";
  }
  if (const auto all = schema.find("allOf"); all != schema.end() && all->is_array()) {
    for (const json& b : *all) {
      if (std::string t = infer_type(b); !t.empty() && t != "string") return t;
    }
    return "string";
  }
  if (schema.contains("properties")) return "object";
  if (schema.contains("items")) return "array";
  return "";
}

XmlValueKind kind_of_type(std::string type) {
  type = ascii_lower(trim(type));
  if (type.empty() || type == "string" || type == "str" || type == "text" || type == "varchar" ||
      type == "char" || type == "enum") {
    return XmlValueKind::kString;
  }
  for (const char* p : {"int", "uint", "long", "short", "unsigned"}) {
    if (type.starts_with(p)) return XmlValueKind::kInteger;
  }
  if (type.starts_with("num") || type.starts_with("float")) return XmlValueKind::kNumber;
  if (type == "boolean" || type == "bool" || type == "binary") return XmlValueKind::kBoolean;
  if (type == "object" || type == "array" || type == "arr" || type.starts_with("dict") ||
      type.starts_with("list")) {
    return XmlValueKind::kJson;
  }
  return XmlValueKind::kLiteral;
}

// SGLang's get_schema_properties: the top-level properties, or those of the anyOf / oneOf /
// allOf branches (the first branch naming one wins), each with its value's kind.
void collect_kinds(const json& schema, std::map<std::string, XmlValueKind>& out) {
  if (!schema.is_object()) return;
  if (const auto p = schema.find("properties"); p != schema.end() && p->is_object()) {
    for (const auto& [name, s] : p->items()) out.try_emplace(name, kind_of_type(infer_type(s)));
    return;
  }
  for (const char* key : {"anyOf", "oneOf", "allOf"}) {
    const auto branches = schema.find(key);
    if (branches == schema.end() || !branches->is_array()) continue;
    for (const json& b : *branches) collect_kinds(b, out);
  }
}

// `text` parsed, or null when it is not JSON.
json parse_or_null(std::string_view text) {
  auto parsed = parse_ordered_json(text);
  return parsed.ok() ? *std::move(parsed) : json(nullptr);
}

}  // namespace

XmlValueKind xml_value_kind(std::string_view parameter_schema_json) {
  return kind_of_type(infer_type(parse_or_null(parameter_schema_json)));
}

std::string xml_value_to_json(std::string_view raw, XmlValueKind kind) {
  if (ascii_lowers_to(raw, "null")) return "null";
  std::optional<std::string> converted;
  switch (kind) {
    case XmlValueKind::kString:
      break;
    case XmlValueKind::kInteger:
      converted = python_int(raw);
      break;
    case XmlValueKind::kNumber:
      converted = python_float(raw);
      break;
    case XmlValueKind::kBoolean:
      return ascii_lowers_to(raw, "true") ? "true" : "false";
    case XmlValueKind::kJson:
      if (auto v = parse_ordered_json(raw); v.ok()) {
        converted.emplace();
        dump_python_style(*v, *converted);
        break;
      }
      converted = python_literal(raw);
      break;
    case XmlValueKind::kLiteral:
      converted = python_literal(raw);
      break;
  }
  return converted ? *converted : json_string(raw);
}

std::shared_ptr<const XmlParameterKinds> xml_parameter_kinds(std::span<const FunctionTool> tools) {
  auto kinds = std::make_shared<XmlParameterKinds>();
  for (const FunctionTool& tool : tools) {
    collect_kinds(parse_or_null(tool.parameters_json), (*kinds)[tool.name]);
  }
  return kinds;
}

Qwen3CoderParser::Qwen3CoderParser(std::shared_ptr<const XmlParameterKinds> kinds)
    : kinds_(std::move(kinds)),
      text_scanner_({std::string(kToolCall), std::string(kFunction)}),
      block_scanner_({std::string(kFunction), std::string(kToolCallEnd)}),
      function_scanner_({std::string(kParameter), std::string(kFunctionEnd)}),
      value_scanner_(
          {std::string(kParameterEnd), std::string(kParameter), std::string(kFunctionEnd)}) {}

void Qwen3CoderParser::text(std::string_view s, EventSink& out) {
  std::string t;
  text_.write(s, t);
  out.content(t);
}

void Qwen3CoderParser::begin_function(EventSink& out) {
  out.begin_call(name_);
  params_ = nullptr;
  if (kinds_ != nullptr) {
    if (const auto it = kinds_->find(name_); it != kinds_->end()) params_ = &it->second;
  }
  wrote_param_ = false;
  raw_.clear();
  state_ = State::kFunction;
}

void Qwen3CoderParser::end_parameter(EventSink& out) {
  std::string_view value = value_;
  if (value.starts_with('\n')) value.remove_prefix(1);
  if (value.ends_with('\n')) value.remove_suffix(1);
  XmlValueKind kind = XmlValueKind::kString;
  if (params_ != nullptr) {
    if (const auto it = params_->find(param_); it != params_->end()) kind = it->second;
  }
  out.arguments(std::string(wrote_param_ ? ", " : "{") + json_string(param_) + ": " +
                xml_value_to_json(value, kind));
  wrote_param_ = true;
  value_.clear();
}

void Qwen3CoderParser::end_function(EventSink& out) {
  out.arguments(wrote_param_ ? "}" : "{}");
  leave_function();
}

void Qwen3CoderParser::leave_function() {
  state_ = in_block_ ? State::kBlock : State::kText;
  if (!in_block_) text_.skip_leading();
}

void Qwen3CoderParser::step(char c, EventSink& out) {
  switch (state_) {
    case State::kText: {
      std::string t;
      const int marker = text_scanner_.step(c, t);
      text(t, out);
      if (marker == 0) {
        text_.take_held();
        in_block_ = true;
        state_ = State::kBlock;
      } else if (marker == 1) {
        raw_ = text_.take_held() + std::string(kFunction);
        name_.clear();
        state_ = State::kName;
      }
      return;
    }
    case State::kBlock: {
      std::string dropped;
      const int marker = block_scanner_.step(c, dropped);
      if (marker == 0) {
        name_.clear();
        state_ = State::kName;
      } else if (marker == 1) {
        in_block_ = false;
        leave_function();
      }
      return;
    }
    case State::kName:
      if (c == '>') {
        begin_function(out);
        return;
      }
      if (c == '\n' || c == '<' || name_.size() >= kMaxNameBytes) {
        // Not a call: outside a block its markup is content; inside one, dropped.
        state_ = in_block_ ? State::kBlock : State::kText;
        if (!in_block_) text(std::exchange(raw_, {}), out);
        step(c, out);
        return;
      }
      name_ += c;
      raw_ += c;
      return;
    case State::kFunction: {
      std::string dropped;
      const int marker = function_scanner_.step(c, dropped);
      if (marker == 0) {
        param_.clear();
        state_ = State::kParamName;
      } else if (marker == 1) {
        end_function(out);
      }
      return;
    }
    case State::kParamName:
      if (c == '>') {
        value_.clear();
        state_ = State::kValue;
      } else if (param_.size() < kMaxNameBytes) {
        param_ += c;
      }
      return;
    case State::kValue: {
      const int marker = value_scanner_.step(c, value_);
      if (marker < 0) return;
      end_parameter(out);
      if (marker == 0) {
        state_ = State::kFunction;
      } else if (marker == 1) {
        param_.clear();
        state_ = State::kParamName;
      } else {
        end_function(out);
      }
      return;
    }
  }
}

void Qwen3CoderParser::finish(EventSink& out) {
  switch (state_) {
    case State::kText:
      text(text_scanner_.take_pending(), out);
      out.content(text_.take_held());
      break;
    case State::kBlock:
      break;
    case State::kName:
      if (!in_block_) {
        text(std::exchange(raw_, {}), out);
        out.content(text_.take_held());
      }
      break;
    case State::kFunction:
    case State::kParamName:
      end_function(out);
      break;
    case State::kValue:
      value_ += value_scanner_.take_pending();
      end_parameter(out);
      end_function(out);
      break;
  }
}

}  // namespace sgl::function_call
