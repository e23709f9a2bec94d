// Value filters: default, tojson (transformers' json.dumps), int, float, abs, round, pprint.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "tokenizer/chat_template/call_args.h"
#include "tokenizer/chat_template/errors.h"
#include "tokenizer/chat_template/filter_impls.h"
#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/json_value.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"

namespace sgl::tokenizer::jinja {
namespace {

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

// Python int(str, base); nullopt when the text is not an integer literal.
std::optional<int64_t> parse_py_int(const std::string& text, int base) {
  std::string s = py_strip(text, nullptr, true, true);
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  auto has_prefix = [&](char p) {
    return i + 1 < s.size() && s[i] == '0' && (s[i + 1] == p || s[i + 1] == p - 32);
  };
  if (base == 0) {
    base = has_prefix('x') ? 16 : has_prefix('o') ? 8 : has_prefix('b') ? 2 : 10;
    if (base != 10) i += 2;
  } else if ((base == 16 && has_prefix('x')) || (base == 8 && has_prefix('o')) ||
             (base == 2 && has_prefix('b'))) {
    i += 2;
  }
  if (i >= s.size()) return std::nullopt;
  uint64_t v = 0;
  bool prev_digit = false;
  for (; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (!prev_digit || i + 1 >= s.size()) return std::nullopt;
      prev_digit = false;
      continue;
    }
    int d = digit_value(s[i]);
    if (d >= base) return std::nullopt;
    if (v > (static_cast<uint64_t>(INT64_MAX) + 1 - static_cast<uint64_t>(d)) /
                static_cast<uint64_t>(base)) {
      return std::nullopt;
    }
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
    prev_digit = true;
  }
  if (!prev_digit) return std::nullopt;
  if (!negative && v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
}

// Python float(str); nullopt when the text is not a float literal.
std::optional<double> parse_py_float(const std::string& text) {
  std::string s = py_strip(text, nullptr, true, true);
  std::string cleaned;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      bool ok = i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                std::isdigit(static_cast<unsigned char>(s[i + 1]));
      if (!ok) return std::nullopt;
      continue;
    }
    cleaned.push_back(s[i]);
  }
  if (cleaned.empty()) return std::nullopt;
  std::string lower = py_lower(cleaned);
  std::string body = lower;
  double sign = 1;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    sign = body[0] == '-' ? -1 : 1;
    body = body.substr(1);
  }
  if (body == "inf" || body == "infinity") return sign * HUGE_VAL;
  if (body == "nan") return std::nan("");
  for (char c : body) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != '+' &&
        c != '-') {
      return std::nullopt;
    }
  }
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(cleaned.c_str(), &end);
  if (end == cleaned.c_str() || *end != '\0') return std::nullopt;
  return d;
}

Status float_to_int_error(double d) {
  if (std::isnan(d)) return value_error("cannot convert float NaN to integer");
  return invalid_argument("OverflowError: cannot convert float infinity to integer");
}

}  // namespace

Result<Value> f_default(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(
      auto a,
      bind_args("default", args, {{"default_value", Value("")}, {"boolean", Value(false)}}));
  if (input.is_undefined() || (a[1].truthy() && !input.truthy())) return a[0];
  return input;
}

// NOTE: transformers replaces Jinja's tojson with json.dumps(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False): no HTML escaping, keys keep their order.
Result<Value> f_tojson(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("tojson", args,
                                         {{"ensure_ascii", Value(false)},
                                          {"indent", Value::none()},
                                          {"separators", Value::none()},
                                          {"sort_keys", Value(false)}}));
  JsonDumpOptions o;
  o.ensure_ascii = a[0].truthy();
  if (a[1].is_string()) {
    o.indent = a[1].as_string();
  } else if (a[1].is_integral()) {
    o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(a[1].as_int(), 0, 1024)), ' ');
  } else if (!a[1].is_none()) {
    return type_error("indent must be an int or a str");
  }
  if (!a[2].is_none()) {
    if (!a[2].is_sequence() || a[2].items().size() != 2 || !a[2].items()[0].is_string() ||
        !a[2].items()[1].is_string()) {
      return value_error("separators must be a (item_separator, key_separator) pair of str");
    }
    o.item_separator = a[2].items()[0].as_string();
    o.key_separator = a[2].items()[1].as_string();
  }
  o.sort_keys = a[3].truthy();
  o.max_bytes = interp.options().max_output_bytes;
  if (o.sort_keys) SGL_RETURN_IF_ERROR(interp.budget().charge_walk(input));  // key comparisons
  SGL_ASSIGN_OR_RETURN(std::string out, dump_json(input, o));
  SGL_RETURN_IF_ERROR(interp.budget().allocate(out.size()));
  return Value(std::move(out));
}

Result<Value> f_int(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a,
                       bind_args("int", args, {{"default", Value(0)}, {"base", Value(10)}}));
  switch (input.kind()) {
    case Kind::kUndefined:
      return undefined_error(input);
    case Kind::kBool:
    case Kind::kInt:
      return Value(input.as_int());
    case Kind::kFloat: {
      double d = input.as_double();
      if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return float_to_int_error(d);
      return Value(static_cast<int64_t>(d));
    }
    case Kind::kString: {
      SGL_ASSIGN_OR_RETURN(int64_t base, int_arg("int", a[1]));
      if (base != 0 && (base < 2 || base > 36))
        return value_error("int() base must be >= 2 and <= 36, or 0");
      if (auto v = parse_py_int(input.as_string(), static_cast<int>(base))) return Value(*v);
      if (auto f = parse_py_float(input.as_string())) {
        if (!std::isfinite(*f) || std::fabs(*f) >= 9.2e18) return a[0];
        return Value(static_cast<int64_t>(*f));
      }
      return a[0];
    }
    default:
      return a[0];
  }
}

Result<Value> f_float(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("float", args, {{"default", Value(0.0)}}));
  switch (input.kind()) {
    case Kind::kUndefined:
      return undefined_error(input);
    case Kind::kBool:
    case Kind::kInt:
    case Kind::kFloat:
      return Value(input.as_double());
    case Kind::kString:
      if (auto f = parse_py_float(input.as_string())) return Value(*f);
      return a[0];
    default:
      return a[0];
  }
}

Result<Value> f_abs(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("abs", args, {}).status());
  if (input.is_undefined()) return undefined_error(input);
  if (input.is_float()) return Value(std::fabs(input.as_double()));
  if (input.is_integral()) {
    int64_t v = input.as_int();
    if (v == INT64_MIN) return invalid_argument("OverflowError: integer overflow");
    return Value(v < 0 ? -v : v);
  }
  return type_error("bad operand type for abs(): '" + type_name(input) + "'");
}

Result<Value> f_round(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(
      auto a, bind_args("round", args, {{"precision", Value(0)}, {"method", Value("common")}}));
  SGL_ASSIGN_OR_RETURN(std::string method, interp.str(a[1]));
  if (method != "common" && method != "ceil" && method != "floor") {
    return filter_argument_error("method must be common, ceil or floor");
  }
  SGL_ASSIGN_OR_RETURN(int64_t precision, int_arg("round", a[0]));
  if (input.is_undefined()) return undefined_error(input);
  if (!input.is_number()) {
    return type_error("type " + type_name(input) + " doesn't define __round__ method");
  }
  if (method == "common") {
    if (input.is_integral() && precision >= 0) return Value(input.as_int());
    double x = input.as_double();
    if (!std::isfinite(x)) return Value(x);
    if (precision == 0) return Value(std::nearbyint(x));
    if (precision > 0 && precision < 300) {
      char buf[512];
      std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(precision), x);
      return Value(std::strtod(buf, nullptr));
    }
    double scale = std::pow(10.0, static_cast<double>(-precision));
    // Rounding to a place above every finite double leaves zero (0 * inf would be NaN).
    double r = std::isinf(scale) ? 0.0 * x : std::nearbyint(x / scale) * scale;
    if (!input.is_integral()) return Value(r);
    // The nearest multiple of 10^-precision can pass INT64_MAX.
    if (std::fabs(r) >= 9.2e18) return invalid_argument("OverflowError: integer overflow");
    return Value(static_cast<int64_t>(r));
  }
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = input.as_double() * scale;
  x = method == "ceil" ? std::ceil(x) : std::floor(x);
  return Value(x / scale);
}

Result<Value> f_pprint(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("pprint", args, {}).status());
  std::string text = py_repr(input, interp.options().max_output_bytes);
  SGL_RETURN_IF_ERROR(interp.budget().allocate(text.size()));
  return Value(std::move(text));
}

}  // namespace sgl::tokenizer::jinja
