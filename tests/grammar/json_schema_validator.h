// A small JSON Schema validator for the keywords the grammar compiler supports, independent of
// the compiler (the tests check generated texts against it).
#pragma once

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

namespace sgl::grammar::test {

using OJson = nlohmann::ordered_json;

inline bool regex_search(const std::string& pattern, const std::string& s) {
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF, &err, &off, nullptr);
  if (code == nullptr) return false;
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code, nullptr);
  const int rc =
      pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, data, nullptr);
  pcre2_match_data_free(data);
  pcre2_code_free(code);
  return rc >= 0;
}

inline size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

inline bool valid_date(const std::string& s) {
  if (!regex_search("^\\d{4}-\\d{2}-\\d{2}$", s)) return false;
  const int y = std::stoi(s.substr(0, 4)), m = std::stoi(s.substr(5, 2)),
            d = std::stoi(s.substr(8, 2));
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  // Year 0 is RFC 3339 syntax but no date for Python (jsonschema) and most parsers.
  return y >= 1 && m >= 1 && m <= 12 && d >= 1 && d <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

inline bool valid_time(const std::string& s) {
  return regex_search(
      "^([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d+)?(Z|[+-]([01]\\d|2[0-3]):[0-5]\\d)$", s);
}

// An IPv6 address (RFC 4291, no embedded IPv4): groups of 1-4 hex digits, eight of them or
// fewer around a single "::".
inline bool valid_ipv4(const std::string& s) {
  if (!regex_search("^\\d{1,3}(\\.\\d{1,3}){3}$", s)) return false;
  size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    const size_t dot = s.find('.', pos);
    const std::string part = s.substr(pos, dot - pos);
    if (std::stoi(part) > 255 || (part.size() > 1 && part[0] == '0')) return false;
    pos = dot + 1;
  }
  return true;
}

// RFC 4291 2.2: eight groups, or fewer around one "::"; the last two may be an IPv4 address.
inline bool valid_ipv6(const std::string& text) {
  std::string s = text;
  int n = 0;  // groups
  if (const size_t dot = s.find('.'); dot != std::string::npos) {
    const size_t colon = s.rfind(':');
    if (colon == std::string::npos || colon > dot || !valid_ipv4(s.substr(colon + 1))) {
      return false;
    }
    n = 2;
    // "...::a.b.c.d" keeps its "::"; "...:g:a.b.c.d" drops the ':' before the address.
    s = colon > 0 && s[colon - 1] == ':' ? s.substr(0, colon + 1) : s.substr(0, colon);
  }
  auto groups = [](const std::string& part, int& n) {
    if (part.empty()) return true;
    size_t start = 0;
    while (true) {
      const size_t colon = part.find(':', start);
      const std::string g = part.substr(start, colon - start);
      if (g.empty() || g.size() > 4 ||
          g.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
        return false;
      }
      ++n;
      if (colon == std::string::npos) return true;
      start = colon + 1;
    }
  };
  const size_t gap = s.find("::");
  if (gap == std::string::npos) return groups(s, n) && n == 8;
  if (s.find("::", gap + 1) != std::string::npos) return false;
  return groups(s.substr(0, gap), n) && groups(s.substr(gap + 2), n) && n <= 7;
}

// A host name (RFC 1123): dot-separated labels of 1-63 letters, digits and inner hyphens, 253
// characters at most, the last label not all digits.
inline bool valid_hostname(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  std::string last;
  while (true) {
    const size_t dot = s.find('.', start);
    last = s.substr(start, dot - start);
    if (last.empty() || last.size() > 63 || last.front() == '-' || last.back() == '-') return false;
    for (char c : last) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return last.find_first_not_of("0123456789") != std::string::npos;
}

// An RFC 3339 duration: P, then date parts in the order Y M D (a run without gaps) and / or T
// with H M S (likewise), or weeks alone.
inline bool valid_duration(const std::string& s) {
  if (s.size() < 3 || s[0] != 'P') return false;
  if (regex_search("^P\\d+W$", s)) return true;
  const size_t t = s.find('T');
  const std::string date = s.substr(1, t == std::string::npos ? std::string::npos : t - 1);
  const std::string time = t == std::string::npos ? "" : s.substr(t + 1);
  if (t != std::string::npos && time.empty()) return false;
  // Each part's units must be consecutive in their order, ending where the spec allows.
  const bool date_ok =
      date.empty() ||
      regex_search("^(\\d+Y\\d+M\\d+D|\\d+Y\\d+M|\\d+Y|\\d+M\\d+D|\\d+M|\\d+D)$", date);
  const bool time_ok =
      time.empty() ||
      regex_search("^(\\d+H\\d+M\\d+S|\\d+H\\d+M|\\d+H|\\d+M\\d+S|\\d+M|\\d+S)$", time);
  return date_ok && time_ok && !(date.empty() && time.empty());
}

inline bool valid_format(const std::string& format, const std::string& s) {
  if (format == "date") return valid_date(s);
  if (format == "time") return valid_time(s);
  if (format == "date-time") {
    const size_t t = s.find('T');
    return t == 10 && valid_date(s.substr(0, 10)) && valid_time(s.substr(11));
  }
  if (format == "email") {
    const size_t at = s.find('@');
    return at != std::string::npos && at > 0 && s.find('.', at) != std::string::npos &&
           s.back() != '.';
  }
  if (format == "uuid") {
    return regex_search("^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$", s);
  }
  if (format == "uri") return regex_search("^[a-zA-Z][a-zA-Z0-9+.-]*:[^\\s]+$", s);
  if (format == "ipv4") return valid_ipv4(s);
  if (format == "ipv6") return valid_ipv6(s);
  if (format == "hostname") return valid_hostname(s);
  if (format == "duration") return valid_duration(s);
  return false;
}

class Validator {
 public:
  explicit Validator(const OJson& root) : root_(root) {}

  // Empty string: valid; otherwise the first violation found.
  std::string validate(const OJson& v, const OJson& s, const std::string& at = "") const {
    if (s.is_boolean()) return s.get<bool>() ? "" : at + ": schema false";
    if (s.contains("$ref")) {
      std::string e = validate(v, resolve(s["$ref"].get<std::string>()), at);
      if (!e.empty()) return e;
    }
    if (s.contains("allOf")) {
      for (const OJson& part : s["allOf"]) {
        std::string e = validate(v, part, at);
        if (!e.empty()) return e;
      }
    }
    if (s.contains("anyOf")) {
      bool any = false;
      for (const OJson& part : s["anyOf"]) any = any || validate(v, part, at).empty();
      if (!any) return at + ": no anyOf branch";
    }
    if (s.contains("oneOf")) {
      int n = 0;
      for (const OJson& part : s["oneOf"]) n += validate(v, part, at).empty();
      if (n != 1) return at + ": " + std::to_string(n) + " oneOf branches match";
    }
    const bool null_ok = s.contains("nullable") && s["nullable"] == true && v.is_null();
    if (s.contains("const") && v != s["const"]) return at + ": not the const";
    if (s.contains("enum")) {
      bool found = false;
      for (const OJson& e : s["enum"]) found = found || e == v;
      if (!found && !null_ok) return at + ": not in enum";
    }
    if (s.contains("type") && !null_ok) {
      bool ok = false;
      if (s["type"].is_string()) {
        ok = has_type(v, s["type"].get<std::string>());
      } else {
        for (const OJson& t : s["type"]) ok = ok || has_type(v, t.get<std::string>());
      }
      if (!ok) return at + ": wrong type for " + v.dump();
    }
    if (v.is_object()) {
      std::string e = validate_object(v, s, at);
      if (!e.empty()) return e;
    }
    if (v.is_array()) {
      std::string e = validate_array(v, s, at);
      if (!e.empty()) return e;
    }
    if (v.is_string()) {
      const std::string str = v.get<std::string>();
      const size_t n = code_points(str);
      if (s.contains("minLength") && n < s["minLength"].get<size_t>()) return at + ": too short";
      if (s.contains("maxLength") && n > s["maxLength"].get<size_t>()) return at + ": too long";
      if (s.contains("pattern") && !regex_search(s["pattern"].get<std::string>(), str)) {
        return at + ": pattern mismatch: " + str;
      }
      if (s.contains("format") && !valid_format(s["format"].get<std::string>(), str)) {
        return at + ": bad " + s["format"].get<std::string>() + ": " + str;
      }
    }
    if (v.is_number()) {
      const double x = v.get<double>();
      auto num = [&](const char* k) { return s[k].get<double>(); };
      if (s.contains("minimum") && x < num("minimum")) return at + ": below minimum";
      if (s.contains("maximum") && x > num("maximum")) return at + ": above maximum";
      if (s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_number() &&
          x <= num("exclusiveMinimum")) {
        return at + ": not above exclusiveMinimum";
      }
      if (s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_number() &&
          x >= num("exclusiveMaximum")) {
        return at + ": not below exclusiveMaximum";
      }
    }
    return "";
  }

 private:
  static bool has_type(const OJson& v, const std::string& t) {
    if (t == "null") return v.is_null();
    if (t == "boolean") return v.is_boolean();
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "number") return v.is_number();
    if (t == "integer") {
      return v.is_number_integer() ||
             (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    }
    return false;
  }

  const OJson& resolve(const std::string& ref) const {
    if (ref == "#") return root_;
    return root_.at(OJson::json_pointer(ref.substr(1)));
  }

  std::string validate_object(const OJson& v, const OJson& s, const std::string& at) const {
    if (s.contains("required")) {
      for (const OJson& r : s["required"]) {
        if (!v.contains(r.get<std::string>())) return at + ": missing " + r.get<std::string>();
      }
    }
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string p = at + "/" + it.key();
      if (s.contains("properties") && s["properties"].contains(it.key())) {
        std::string e = validate(it.value(), s["properties"][it.key()], p);
        if (!e.empty()) return e;
      } else if (s.contains("additionalProperties")) {
        std::string e = validate(it.value(), s["additionalProperties"], p);
        if (!e.empty()) return e;
      }
    }
    return "";
  }

  std::string validate_array(const OJson& v, const OJson& s, const std::string& at) const {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return at + ": few";
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return at + ": many";
    const OJson* prefix = nullptr;
    const OJson* rest = nullptr;
    if (s.contains("prefixItems")) {
      prefix = &s["prefixItems"];
      if (s.contains("items")) rest = &s["items"];
    } else if (s.contains("items") && s["items"].is_array()) {
      prefix = &s["items"];
      if (s.contains("additionalItems")) rest = &s["additionalItems"];
    } else if (s.contains("items")) {
      rest = &s["items"];
    }
    for (size_t i = 0; i < v.size(); ++i) {
      const OJson* item = (prefix != nullptr && i < prefix->size()) ? &(*prefix)[i] : rest;
      if (item == nullptr) continue;
      std::string e = validate(v[i], *item, at + "/" + std::to_string(i));
      if (!e.empty()) return e;
    }
    return "";
  }

  const OJson& root_;
};

}  // namespace sgl::grammar::test
