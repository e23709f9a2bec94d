// Python-style str()/repr() of interpreter values.
#include "tokenizer/chat_template/value_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tokenizer/chat_template/utf8.h"

namespace sgl::tokenizer::jinja {
namespace {

constexpr int kMaxReprDepth = 64;

bool is_printable(char32_t cp) {
  if (cp < 0x20 || cp == 0x7F) return false;
  if (cp < 0x7F) return true;
  if (cp <= 0xA0 || cp == 0xAD) return false;
  if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F)) {
    return false;
  }
  if ((cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF) return false;
  if ((cp >= 0xD800 && cp <= 0xF8FF) || (cp >= 0xFFF9 && cp <= 0xFFFB)) return false;
  if (cp == 0xFFFE || cp == 0xFFFF || cp >= 0xF0000) return false;
  return true;
}

void append_hex(std::string& out, char prefix, char32_t cp, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "\\%c%0*x", prefix, digits, static_cast<unsigned>(cp));
  out += buf;
}

// Stops descending once `out` is longer than `limit`: the caller's size check then fails.
void repr_into(std::string& out, const Value& v, int depth, size_t limit);

void repr_items(std::string& out, const std::vector<Value>& items, int depth, size_t limit) {
  for (size_t i = 0; i < items.size() && out.size() <= limit; ++i) {
    if (i > 0) out += ", ";
    repr_into(out, items[i], depth + 1, limit);
  }
}

void repr_dict(std::string& out, const DictData& d, int depth, size_t limit) {
  out += '{';
  bool first = true;
  for (const auto& [k, val] : d.entries()) {
    if (out.size() > limit) return;
    if (!first) out += ", ";
    first = false;
    repr_into(out, k, depth + 1, limit);
    out += ": ";
    repr_into(out, val, depth + 1, limit);
  }
  out += '}';
}

void repr_into(std::string& out, const Value& v, int depth, size_t limit) {
  if (out.size() > limit) return;
  if (depth > kMaxReprDepth) {
    out += "...";
    return;
  }
  switch (v.kind()) {
    case Kind::kUndefined:
      out += "Undefined";
      return;
    case Kind::kNone:
      out += "None";
      return;
    case Kind::kBool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Kind::kFloat:
      out += float_repr(v.as_double());
      return;
    case Kind::kString:
      if (v.is_markup()) {
        out += "Markup(" + string_repr(v.as_string()) + ")";
      } else {
        out += string_repr(v.as_string());
      }
      return;
    case Kind::kList:
      out += '[';
      repr_items(out, v.items(), depth, limit);
      out += ']';
      return;
    case Kind::kTuple:
      out += '(';
      repr_items(out, v.items(), depth, limit);
      if (v.items().size() == 1) out += ',';
      out += ')';
      return;
    case Kind::kDict:
      repr_dict(out, v.dict_data(), depth, limit);
      return;
    case Kind::kIterator: {
      const std::string& type = v.list_data().iter_type;
      if (type == "generator") {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "<generator object at %p>", v.identity());
        out += buf;
        return;
      }
      out += type + "([";
      repr_items(out, v.items(), depth, limit);
      out += "])";
      return;
    }
    case Kind::kObject: {
      const ObjectData& obj = v.object_data();
      if (obj.assignable) {
        out += "<Namespace ";
        repr_dict(out, obj.attrs, depth, limit);
        out += '>';
        return;
      }
      out += "<" + obj.type_name + " object>";
      return;
    }
    case Kind::kCallable:
      out += "<function " + v.callable_data().name + ">";
      return;
  }
}

}  // namespace

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci looks like "-1.2345e+02": split sign, digits, exponent.
  bool negative = sci[0] == '-';
  size_t start = negative ? 1 : 0;
  size_t epos = sci.find('e');
  std::string mantissa = sci.substr(start, epos - start);
  int exponent = std::atoi(sci.c_str() + epos + 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  int decpt = exponent + 1;  // position of the decimal point relative to the digits
  std::string out = negative ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits;
      out.append(static_cast<size_t>(decpt) - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt));
      out += '.';
      out += digits.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out += digits[0];
  if (digits.size() > 1) {
    out += '.';
    out += digits.substr(1);
  }
  char ebuf[16];
  std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  out += ebuf;
  return out;
}

std::string string_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out;
  out.reserve(s.size() + 2);
  out += quote;
  for (char32_t cp : utf8_decode(s)) {
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (is_printable(cp)) {
      append_utf8(out, cp);
    } else if (cp < 0x100) {
      append_hex(out, 'x', cp, 2);
    } else if (cp < 0x10000) {
      append_hex(out, 'u', cp, 4);
    } else {
      append_hex(out, 'U', cp, 8);
    }
  }
  out += quote;
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string py_repr(const Value& v, size_t max_bytes) {
  std::string out;
  repr_into(out, v, 0, max_bytes);
  return out;
}

std::string message_repr(const Value& v) {
  constexpr size_t kMaxBytes = 1000;
  std::string s = py_repr(v, kMaxBytes);
  if (s.size() > kMaxBytes) {
    s.resize(kMaxBytes);
    s += "...";
  }
  return s;
}

std::string py_str(const Value& v, size_t max_bytes) {
  if (v.is_string()) return v.as_string();
  if (v.is_undefined()) return "";
  return py_repr(v, max_bytes);
}

}  // namespace sgl::tokenizer::jinja
