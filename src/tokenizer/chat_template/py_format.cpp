// Python string formatting helpers (str.format, %, format specs, strftime).
#include "tokenizer/chat_template/py_format.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include "tokenizer/chat_template/errors.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"

namespace sgl::tokenizer::jinja {
namespace {

struct Spec {
  char32_t fill = ' ';
  char align = '\0';  // < > ^ =
  char sign = '-';
  bool alternate = false;
  bool zero = false;
  int width = -1;
  bool grouping = false;
  int precision = -1;
  char type = '\0';
};

Result<Spec> parse_spec(std::string_view spec) {
  Spec s;
  std::u32string u = utf8_decode(spec);
  size_t i = 0;
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (u.size() >= 2 && is_align(u[1])) {
    s.fill = u[0];
    s.align = static_cast<char>(u[1]);
    i = 2;
  } else if (!u.empty() && is_align(u[0])) {
    s.align = static_cast<char>(u[0]);
    i = 1;
  }
  if (i < u.size() && (u[i] == '+' || u[i] == '-' || u[i] == ' '))
    s.sign = static_cast<char>(u[i++]);
  if (i < u.size() && u[i] == '#') {
    s.alternate = true;
    ++i;
  }
  if (i < u.size() && u[i] == '0') {
    s.zero = true;
    ++i;
  }
  if (i < u.size() && u[i] >= '0' && u[i] <= '9') {
    s.width = 0;
    while (i < u.size() && u[i] >= '0' && u[i] <= '9') {
      s.width = s.width * 10 + static_cast<int>(u[i++] - '0');
      if (s.width > 100000) return value_error("Too many decimal digits in format string");
    }
  }
  if (i < u.size() && (u[i] == ',' || u[i] == '_')) {
    s.grouping = true;
    ++i;
  }
  if (i < u.size() && u[i] == '.') {
    ++i;
    if (i >= u.size() || u[i] < '0' || u[i] > '9')
      return value_error("Format specifier missing precision");
    s.precision = 0;
    while (i < u.size() && u[i] >= '0' && u[i] <= '9') {
      s.precision = s.precision * 10 + static_cast<int>(u[i++] - '0');
      if (s.precision > 10000) return value_error("precision too big");
    }
  }
  if (i < u.size()) s.type = static_cast<char>(u[i++]);
  if (i < u.size()) return value_error("Invalid format specifier");
  return s;
}

std::string pad(std::string body, const Spec& s, char default_align, size_t sign_len = 0) {
  if (s.width < 0) return body;
  size_t len = utf8_length(body);
  if (len >= static_cast<size_t>(s.width)) return body;
  size_t n = static_cast<size_t>(s.width) - len;
  char align = s.align ? s.align : default_align;
  char32_t fill = s.fill;
  if (s.zero && !s.align) {
    align = '=';
    fill = '0';
  }
  std::string f;
  append_utf8(f, fill);
  auto repeat = [&](size_t k) {
    std::string out;
    for (size_t j = 0; j < k; ++j) out += f;
    return out;
  };
  switch (align) {
    case '<':
      return body + repeat(n);
    case '^':
      return repeat(n / 2) + body + repeat(n - n / 2);
    case '=':
      return body.substr(0, sign_len) + repeat(n) + body.substr(sign_len);
    default:
      return repeat(n) + body;
  }
}

std::string group_thousands(const std::string& digits) {
  std::string out;
  int count = 0;
  for (size_t i = digits.size(); i > 0; --i) {
    out.insert(out.begin(), digits[i - 1]);
    if (++count % 3 == 0 && i > 1) out.insert(out.begin(), ',');
  }
  return out;
}

std::string with_sign(bool negative, const Spec& s) {
  if (negative) return "-";
  if (s.sign == '+') return "+";
  if (s.sign == ' ') return " ";
  return "";
}

Result<std::string> format_int(int64_t v, const Spec& s) {
  bool negative = v < 0;
  uint64_t mag = negative ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits;
  char type = s.type ? s.type : 'd';
  std::string prefix;
  switch (type) {
    case 'd':
    case 'n':
      digits = std::to_string(mag);
      if (s.grouping) digits = group_thousands(digits);
      break;
    case 'x':
    case 'X': {
      char buf[32];
      std::snprintf(buf, sizeof(buf), type == 'x' ? "%llx" : "%llX",
                    static_cast<unsigned long long>(mag));
      digits = buf;
      if (s.alternate) prefix = type == 'x' ? "0x" : "0X";
      break;
    }
    case 'o': {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%llo", static_cast<unsigned long long>(mag));
      digits = buf;
      if (s.alternate) prefix = "0o";
      break;
    }
    case 'b':
      if (mag == 0) digits = "0";
      while (mag > 0) {
        digits.insert(digits.begin(), static_cast<char>('0' + (mag & 1)));
        mag >>= 1;
      }
      if (s.alternate) prefix = "0b";
      break;
    case 'c': {
      std::string out;
      append_utf8(out, static_cast<char32_t>(v));
      return pad(out, s, '<');
    }
    default:
      return value_error(std::string("Unknown format code '") + type +
                         "' for object of type 'int'");
  }
  std::string head = with_sign(negative, s) + prefix;
  return pad(head + digits, s, '>', head.size());
}

Result<std::string> format_float(double v, const Spec& s) {
  char type = s.type;
  std::string body;
  bool negative = std::signbit(v) && !std::isnan(v);
  double mag = std::fabs(v);
  if (std::isinf(mag) || std::isnan(mag)) {
    body = std::isnan(mag) ? "nan" : "inf";
    if (type == 'F' || type == 'E' || type == 'G') body = std::isnan(mag) ? "NAN" : "INF";
  } else if (type == '\0' && s.precision < 0) {
    body = float_repr(mag);
  } else {
    int precision = s.precision < 0 ? 6 : s.precision;
    char fmt_type = type;
    double x = mag;
    std::string suffix;
    if (type == '%') {
      x *= 100;
      fmt_type = 'f';
      suffix = "%";
    } else if (type == '\0') {
      fmt_type = 'g';
      if (precision == 0) precision = 1;
    } else if (type == 'n') {
      fmt_type = 'g';
    }
    if (std::string("eEfFgG").find(fmt_type) == std::string::npos) {
      return value_error(std::string("Unknown format code '") + type +
                         "' for object of type 'float'");
    }
    char fmt[16];
    std::snprintf(fmt, sizeof(fmt), "%%%s.%d%c", s.alternate ? "#" : "", precision, fmt_type);
    std::vector<char> buf(static_cast<size_t>(precision) + 400);
    std::snprintf(buf.data(), buf.size(), fmt, x);
    body = buf.data();
    if (type == '\0' && body.find_first_of(".einf") == std::string::npos) body += ".0";
    if (s.grouping) {
      size_t end = body.find_first_not_of("0123456789");
      body =
          group_thousands(body.substr(0, end)) + (end == std::string::npos ? "" : body.substr(end));
    }
    body += suffix;
  }
  std::string head = with_sign(negative, s);
  return pad(head + body, s, '>', head.size());
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// A field's decimal index; SIZE_MAX (out of range of anything) when it has too many digits
// for size_t, which std::stoul would throw on.
size_t parse_index(std::string_view digits) {
  if (digits.size() > 18) return SIZE_MAX;
  return std::stoull(std::string(digits));
}

// Resolves "name.attr[key]" against the arguments.
Result<Value> resolve_field(std::string_view field, const CallArgs& args, size_t* auto_index) {
  size_t end = field.find_first_of(".[");
  std::string_view head = field.substr(0, end);
  Value v;
  if (head.empty()) {
    if (*auto_index >= args.positional.size()) {
      return invalid_argument("IndexError: tuple index out of range");
    }
    v = args.positional[(*auto_index)++];
  } else if (all_digits(head)) {
    size_t idx = parse_index(head);
    if (idx >= args.positional.size()) {
      return invalid_argument("IndexError: tuple index out of range");
    }
    v = args.positional[idx];
  } else {
    bool found = false;
    for (const auto& [k, val] : args.keyword) {
      if (k == head) {
        v = val;
        found = true;
      }
    }
    if (!found) return invalid_argument("KeyError: " + string_repr(head));
  }
  size_t i = end;
  while (i != std::string_view::npos && i < field.size()) {
    if (field[i] == '.') {
      size_t next = field.find_first_of(".[", i + 1);
      std::string attr(field.substr(
          i + 1, next == std::string_view::npos ? std::string_view::npos : next - i - 1));
      const Value* found = nullptr;
      if (v.is_object()) found = v.object_data().attrs.find(attr);
      if (found == nullptr) {
        return invalid_argument("AttributeError: '" + type_name(v) + "' object has no attribute " +
                                string_repr(attr));
      }
      v = *found;
      i = next;
    } else {
      size_t close = field.find(']', i);
      if (close == std::string_view::npos) return value_error("Missing ']' in format string");
      std::string key(field.substr(i + 1, close - i - 1));
      Value next_v;
      if (v.is_dict()) {
        const Value* found = v.dict_data().find(key);
        if (found == nullptr && all_digits(key) && key.size() <= 18) {
          found = v.dict_data().find(Value(static_cast<int64_t>(parse_index(key))));
        }
        if (found == nullptr) return invalid_argument("KeyError: " + string_repr(key));
        next_v = *found;
      } else if (v.is_sequence() && all_digits(key)) {
        size_t idx = parse_index(key);
        if (idx >= v.items().size()) return invalid_argument("IndexError: list index out of range");
        next_v = v.items()[idx];
      } else {
        return type_error("'" + type_name(v) + "' object is not subscriptable");
      }
      v = next_v;
      i = close + 1;
    }
  }
  return v;
}

}  // namespace

Result<std::string> format_value(const Value& v, std::string_view spec_text, size_t max_bytes) {
  if (spec_text.empty()) return py_str(v, max_bytes);
  SGL_ASSIGN_OR_RETURN(Spec s, parse_spec(spec_text));
  if (v.is_float() || (v.is_integral() &&
                       std::string("eEfFgG%").find(s.type ? s.type : 'x') != std::string::npos)) {
    return format_float(v.as_double(), s);
  }
  if (v.is_integral()) return format_int(v.as_int(), s);
  if (v.is_string()) {
    if (s.type != '\0' && s.type != 's') {
      return value_error(std::string("Unknown format code '") + s.type +
                         "' for object of type 'str'");
    }
    std::string body = v.as_string();
    if (s.precision >= 0) {
      std::u32string u = utf8_decode(body);
      if (u.size() > static_cast<size_t>(s.precision)) {
        body = utf8_encode(std::u32string_view(u).substr(0, static_cast<size_t>(s.precision)));
      }
    }
    return pad(std::move(body), s, '<');
  }
  return type_error("unsupported format string passed to " + type_name(v) + ".__format__");
}

Result<std::string> str_format(std::string_view fmt, const CallArgs& args, RenderBudget& budget) {
  const size_t limit = budget.options().max_output_bytes;
  BudgetedString out(budget);
  size_t auto_index = 0;
  size_t i = 0;
  while (i < fmt.size()) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        SGL_RETURN_IF_ERROR(out.push_back('}'));
        i += 2;
        continue;
      }
      return value_error("Single '}' encountered in format string");
    }
    if (c != '{') {
      SGL_RETURN_IF_ERROR(out.push_back(c));
      ++i;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      SGL_RETURN_IF_ERROR(out.push_back('{'));
      i += 2;
      continue;
    }
    // Find the matching '}' (format specs may nest one level of braces; not supported).
    size_t close = fmt.find('}', i + 1);
    if (close == std::string_view::npos) return value_error("expected '}' before end of string");
    std::string_view field = fmt.substr(i + 1, close - i - 1);
    std::string_view spec;
    char conversion = '\0';
    size_t colon = field.find(':');
    if (colon != std::string_view::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    size_t bang = field.find('!');
    if (bang != std::string_view::npos) {
      if (bang + 2 != field.size()) return value_error("expected ':' after conversion specifier");
      conversion = field[bang + 1];
      field = field.substr(0, bang);
    }
    SGL_ASSIGN_OR_RETURN(Value v, resolve_field(field, args, &auto_index));
    if (conversion == 'r' || conversion == 'a') {
      v = Value(py_repr(v, limit));
    } else if (conversion == 's') {
      v = Value(py_str(v, limit));
    } else if (conversion != '\0') {
      return value_error(std::string("Unknown conversion specifier ") + conversion);
    }
    SGL_ASSIGN_OR_RETURN(std::string piece, format_value(v, spec, limit));
    SGL_RETURN_IF_ERROR(out.append(piece));
    i = close + 1;
  }
  return out.take();
}

Result<std::string> percent_format(std::string_view fmt, const Value& args, RenderBudget& budget) {
  const size_t limit = budget.options().max_output_bytes;
  std::vector<Value> positional;
  const DictData* mapping = nullptr;
  if (args.is_tuple()) {
    SGL_RETURN_IF_ERROR(budget.allocate_values(args.items().size()));
    positional = args.items();
  } else {
    if (args.is_dict()) mapping = &args.dict_data();
    positional.push_back(args);
  }
  size_t next = 0;
  BudgetedString out(budget);
  size_t i = 0;
  while (i < fmt.size()) {
    if (fmt[i] != '%') {
      SGL_RETURN_IF_ERROR(out.push_back(fmt[i++]));
      continue;
    }
    ++i;
    if (i >= fmt.size()) return value_error("incomplete format");
    Value v;
    bool have_value = false;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string_view::npos || mapping == nullptr) {
        return type_error("format requires a mapping");
      }
      std::string key(fmt.substr(i + 1, close - i - 1));
      const Value* found = mapping->find(key);
      if (found == nullptr) return invalid_argument("KeyError: " + string_repr(key));
      v = *found;
      have_value = true;
      i = close + 1;
    }
    Spec s;
    s.align = '>';
    while (i < fmt.size() && std::string("-+ #0").find(fmt[i]) != std::string::npos) {
      if (fmt[i] == '-') s.align = '<';
      if (fmt[i] == '+') s.sign = '+';
      if (fmt[i] == ' ' && s.sign != '+') s.sign = ' ';
      if (fmt[i] == '#') s.alternate = true;
      if (fmt[i] == '0') s.zero = true;
      ++i;
    }
    while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
      s.width = (s.width < 0 ? 0 : s.width * 10) + (fmt[i++] - '0');
      if (s.width > 100000) return value_error("width too big");
    }
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      s.precision = 0;
      while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
        s.precision = s.precision * 10 + (fmt[i++] - '0');
        if (s.precision > 10000) return value_error("precision too big");
      }
    }
    if (i >= fmt.size()) return value_error("incomplete format");
    char conv = fmt[i++];
    if (conv == '%') {
      SGL_RETURN_IF_ERROR(out.push_back('%'));
      continue;
    }
    if (!have_value) {
      if (next >= positional.size()) return type_error("not enough arguments for format string");
      v = positional[next++];
    }
    if (s.align == '<') s.zero = false;
    if (s.zero) s.align = '\0';
    std::string piece;
    switch (conv) {
      case 's':
      case 'r':
      case 'a': {
        std::string text = conv == 's' ? py_str(v, limit) : py_repr(v, limit);
        if (s.precision >= 0) {
          std::u32string u = utf8_decode(text);
          if (u.size() > static_cast<size_t>(s.precision)) {
            text = utf8_encode(std::u32string_view(u).substr(0, static_cast<size_t>(s.precision)));
          }
        }
        s.zero = false;
        if (!s.align) s.align = '>';
        piece = pad(text, s, '>');
        break;
      }
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o':
      case 'c': {
        if (!v.is_number()) {
          return type_error(std::string("%") + conv + " format: a real number is required, not " +
                            type_name(v));
        }
        if (v.is_float()) {
          double d = v.as_double();
          if (std::isnan(d)) return value_error("cannot convert float NaN to integer");
          // NOTE: Python prints any finite float's integer digits; past int64 we cannot.
          if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) {
            return invalid_argument("OverflowError: cannot convert float " + float_repr(d) +
                                    " to integer");
          }
        }
        int64_t n = v.is_float() ? static_cast<int64_t>(v.as_double()) : v.as_int();
        s.type = (conv == 'i' || conv == 'u') ? 'd' : conv;
        SGL_ASSIGN_OR_RETURN(piece, format_int(n, s));
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G': {
        if (!v.is_number()) {
          return type_error("must be real number, not " + type_name(v));
        }
        s.type = conv;
        if (s.precision < 0) s.precision = 6;
        SGL_ASSIGN_OR_RETURN(piece, format_float(v.as_double(), s));
        break;
      }
      default:
        return value_error(std::string("unsupported format character '") + conv + "'");
    }
    SGL_RETURN_IF_ERROR(out.append(piece));
  }
  if (mapping == nullptr && next < positional.size()) {
    return type_error("not all arguments converted during string formatting");
  }
  return out.take();
}

std::string py_strftime(std::string_view fmt, const std::tm& tm, int microseconds,
                        size_t max_bytes) {
  std::string out;
  size_t i = 0;
  while (i < fmt.size() && out.size() <= max_bytes) {
    size_t pct = fmt.find('%', i);
    if (pct == std::string_view::npos) {
      out += fmt.substr(i);
      break;
    }
    out += fmt.substr(i, pct - i);
    if (pct + 1 >= fmt.size()) {
      out += '%';
      break;
    }
    char code = fmt[pct + 1];
    if (code == 'f') {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "%06d", microseconds);
      out += buf;
      i = pct + 2;
      continue;
    }
    // glibc flag characters (%-d, %_H, %^a, %#b) pass through as CPython does.
    size_t end = pct + 1;
    while (end < fmt.size() && std::string_view("-_0^#").find(fmt[end]) != std::string_view::npos) {
      ++end;
    }
    if (end >= fmt.size()) {
      out += fmt.substr(pct);
      break;
    }
    std::string spec(fmt.substr(pct, end - pct + 1));
    char buf[256];
    size_t n = std::strftime(buf, sizeof(buf), spec.c_str(), &tm);
    out.append(buf, n);
    i = end + 1;
  }
  return out;
}

}  // namespace sgl::tokenizer::jinja
