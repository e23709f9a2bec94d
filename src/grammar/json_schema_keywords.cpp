// Schema keywords (json_schema_keywords.h).
#include "grammar/json_schema_keywords.h"

#include <cmath>
#include <set>
#include <string_view>

#include "core/utf8.h"
#include "grammar/ebnf_parser.h"

namespace sgl::grammar {
namespace {

const std::set<std::string> kSupported = {"$ref",
                                          "type",
                                          "enum",
                                          "const",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "nullable",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "items",
                                          "prefixItems",
                                          "additionalItems",
                                          "minItems",
                                          "maxItems",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum",
                                          "uniqueItems"};

// NOTE: years from 0001 (RFC 3339's grammar allows 0000; Python's date, and so jsonschema,
// does not).
const char* const kFormats[][2] = {
    {"date",
     "(\\d{3}[1-9]|\\d\\d[1-9]\\d|\\d[1-9]\\d\\d|[1-9]\\d{3})-"
     "((0[13578]|1[02])-(0[1-9]|[12]\\d|3[01])|(0[469]|11)-(0[1-9]|[12]\\d|30)|"
     "02-(0[1-9]|1\\d|2[0-8]))"},
    {"time", "([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d{1,6})?(Z|[+-]([01]\\d|2[0-3]):[0-5]\\d)"},
    {"date-time",
     "(\\d{3}[1-9]|\\d\\d[1-9]\\d|\\d[1-9]\\d\\d|[1-9]\\d{3})-"
     "((0[13578]|1[02])-(0[1-9]|[12]\\d|3[01])|(0[469]|11)-(0[1-9]|[12]\\d|30)|"
     "02-(0[1-9]|1\\d|2[0-8]))T([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d{1,6})?"
     "(Z|[+-]([01]\\d|2[0-3]):[0-5]\\d)"},
    {"email",
     "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+)*@"
     "[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)"
     "*\\.[a-zA-Z]{2,24}"},
    {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"},
    {"uri", "[a-zA-Z][a-zA-Z0-9+.-]*:([a-zA-Z0-9._~:/?#\\[\\]@!$&'()*+,;=-]|%[0-9a-fA-F]{2})+"},
    {"ipv4", "((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)"},
    // RFC 4291 2.2's text forms: eight groups, or fewer around one "::", the last two groups
    // possibly an IPv4 address (p groups before the "::" and q after it, p + q <= 5, then it).
    {"ipv6",
     "(([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,7}:|"
     "([0-9a-fA-F]{1,4}:){1,6}:[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,5}(:[0-9a-fA-F]{1,4}){1,2}|"
     "([0-9a-fA-F]{1,4}:){1,4}(:[0-9a-fA-F]{1,4}){1,3}|"
     "([0-9a-fA-F]{1,4}:){1,3}(:[0-9a-fA-F]{1,4}){1,4}|"
     "([0-9a-fA-F]{1,4}:){1,2}(:[0-9a-fA-F]{1,4}){1,5}|[0-9a-fA-F]{1,4}:(:[0-9a-fA-F]{1,4}){1,6}|"
     ":((:[0-9a-fA-F]{1,4}){1,7}|:)|"
     "(([0-9a-fA-F]{1,4}:){6}|::([0-9a-fA-F]{1,4}:){0,5}|"
     "[0-9a-fA-F]{1,4}::([0-9a-fA-F]{1,4}:){0,4}|"
     "([0-9a-fA-F]{1,4}:){1}[0-9a-fA-F]{1,4}::([0-9a-fA-F]{1,4}:){0,3}|"
     "([0-9a-fA-F]{1,4}:){2}[0-9a-fA-F]{1,4}::([0-9a-fA-F]{1,4}:){0,2}|"
     "([0-9a-fA-F]{1,4}:){3}[0-9a-fA-F]{1,4}::([0-9a-fA-F]{1,4}:)?|"
     "([0-9a-fA-F]{1,4}:){4}[0-9a-fA-F]{1,4}::)"
     "((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d))"},
    // RFC 1123 labels, 253 characters at most: up to four labels of up to 63 characters, or five
    // to eight of up to 30 (a regex cannot count the total; 8 x 30 + 7 dots <= 253). The last
    // starts with a letter (an all-digit last label reads as an IPv4 address).
    {"hostname",
     "(([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\\.){0,3}[a-zA-Z]([a-zA-Z0-9-]{0,59}[a-zA-Z0-9])"
     "?|"
     "([a-zA-Z0-9]([a-zA-Z0-9-]{0,28}[a-zA-Z0-9])?\\.){4,7}[a-zA-Z]([a-zA-Z0-9-]{0,28}[a-zA-Z0-9])?"
     ")"},
    // RFC 3339 appendix A (ISO 8601 durations), numbers of up to 9 digits.
    {"duration",
     "P(([0-9]{1,9}D|[0-9]{1,9}M([0-9]{1,9}D)?|[0-9]{1,9}Y([0-9]{1,9}M([0-9]{1,9}D)?)?)"
     "(T([0-9]{1,9}H([0-9]{1,9}M([0-9]{1,9}S)?)?|[0-9]{1,9}M([0-9]{1,9}S)?|[0-9]{1,9}S))?|"
     "T([0-9]{1,9}H([0-9]{1,9}M([0-9]{1,9}S)?)?|[0-9]{1,9}M([0-9]{1,9}S)?|[0-9]{1,9}S)|"
     "[0-9]{1,9}W)"},
};

// `key`'s side of the range: `key` itself and `ex_key`, its exclusive form.
Result<NumberBound> read_bound(const Json& s, const char* key, const char* ex_key,
                               const std::string& path) {
  NumberBound out;
  if (s.contains(key)) {
    if (!s[key].is_number()) return schema_error(path, std::string(key) + " must be a number");
    out.value = s[key].get<double>();
  }
  if (s.contains(ex_key)) {
    const Json& e = s[ex_key];
    if (e.is_boolean()) {
      out.exclusive = e.get<bool>() && out.value.has_value();
    } else if (e.is_number()) {
      const double v = e.get<double>();
      // Both present: the tighter one wins.
      const bool is_min = std::string(key) == "minimum";
      if (!out.value || (is_min ? v >= *out.value : v <= *out.value)) {
        out.value = v;
        out.exclusive = true;
      }
    } else {
      return schema_error(path, std::string(ex_key) + " must be a number or a boolean");
    }
  }
  // Bounds are compared as doubles, which hold every integer up to 2^53 exactly; past it a bound
  // (a float such as 1e17, or one merged from allOf parts) and the +-1 of an exclusive integer
  // bound would round, loosening it. An integer literal past it is refused too: it has already
  // rounded onto 2^53 as a double.
  constexpr uint64_t kExact = uint64_t{1} << 53;
  if (out.value && std::fabs(*out.value) > static_cast<double>(kExact)) {
    return schema_error(path, std::string(key) + " beyond +-2^53 is not supported exactly");
  }
  for (const char* k : {key, ex_key}) {
    if (s.contains(k) && s[k].is_number_integer() &&
        (s[k].is_number_unsigned() ? s[k].get<uint64_t>() > kExact
                                   : s[k].get<int64_t>() < -static_cast<int64_t>(kExact) ||
                                         s[k].get<int64_t>() > static_cast<int64_t>(kExact))) {
      return schema_error(path, std::string(k) + " beyond +-2^53 is not supported exactly");
    }
  }
  return out;
}

}  // namespace

std::string type_of(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return std::floor(d) == d ? "integer" : "number";
  }
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

bool is_supported_keyword(const std::string& key) { return kSupported.count(key) > 0; }

std::optional<std::string_view> format_regex(std::string_view format) {
  for (const auto& f : kFormats) {
    if (format == f[0]) return std::string_view(f[1]);
  }
  return std::nullopt;
}

bool type_allows(const std::string& type, const Json& v) {
  const std::string t = type_of(v);
  return t == type || (type == "number" && t == "integer");
}

Result<std::optional<int64_t>> read_count(const Json& s, const char* key, const std::string& path) {
  if (!s.contains(key)) return std::optional<int64_t>();
  const Json& v = s[key];
  if (!v.is_number() || type_of(v) != "integer" || v.get<double>() < 0) {
    return schema_error(path, std::string(key) + " must be a non-negative integer");
  }
  if (v.get<double>() > kMaxRepeatBound) {
    return schema_error(
        path, std::string(key) + " above " + std::to_string(kMaxRepeatBound) + " is not supported");
  }
  return std::optional<int64_t>(v.get<int64_t>());
}

bool NumberBounds::contains(double x) const {
  return (!lo.value || (lo.exclusive ? x > *lo.value : x >= *lo.value)) &&
         (!hi.value || (hi.exclusive ? x < *hi.value : x <= *hi.value));
}

Result<NumberBounds> read_number_bounds(const Json& s, const std::string& path) {
  NumberBounds out;
  SGL_ASSIGN_OR_RETURN(out.lo, read_bound(s, "minimum", "exclusiveMinimum", path));
  SGL_ASSIGN_OR_RETURN(out.hi, read_bound(s, "maximum", "exclusiveMaximum", path));
  return out;
}

bool ValueBounds::allows(const Json& v) const {
  if (v.is_number()) return numbers.contains(v.get<double>());
  if (v.is_string()) {
    const auto n = static_cast<int64_t>(utf8_length(v.get_ref<const std::string&>()));
    return (!min_length || n >= *min_length) && (!max_length || n <= *max_length);
  }
  return true;
}

Result<ValueBounds> read_value_bounds(const Json& s, const std::string& path) {
  ValueBounds out;
  SGL_ASSIGN_OR_RETURN(out.numbers, read_number_bounds(s, path));
  SGL_ASSIGN_OR_RETURN(out.min_length, read_count(s, "minLength", path));
  SGL_ASSIGN_OR_RETURN(out.max_length, read_count(s, "maxLength", path));
  return out;
}

}  // namespace sgl::grammar
