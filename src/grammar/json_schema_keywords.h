// A schema's keywords for the JSON Schema compiler: which it enforces, the formats' regexes, the
// JSON type of a value, count keywords (minLength, minItems, ...), number bounds (minimum /
// exclusiveMinimum, ...), and whether an enum / const value lies within its schema's bounds.
// Internal to grammar/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "grammar/json_schema_document.h"

namespace sgl::grammar {

// A keyword the compiler enforces (descriptive ones: is_descriptive_keyword).
bool is_supported_keyword(const std::string& key);
// The regex a `format` stands for (date, time, date-time, duration, email, hostname, uuid, uri,
// ipv4, ipv6); nullopt for another.
std::optional<std::string_view> format_regex(std::string_view format);

// "null", "boolean", "integer" (an integral number too), "number", "string", "array", "object".
std::string type_of(const Json& v);
// Whether a schema's `type` allows `v` (every integer is a number).
bool type_allows(const std::string& type, const Json& v);

// A count keyword of `s`: a non-negative integer up to kMaxRepeatBound; nullopt when absent.
Result<std::optional<int64_t>> read_count(const Json& s, const char* key, const std::string& path);

// One side of a number range: minimum (maximum) or its exclusive form (a number, draft 6+, or
// draft 4's boolean flag on minimum), the tighter one when both are numbers.
struct NumberBound {
  std::optional<double> value;
  bool exclusive = false;
};
struct NumberBounds {
  NumberBound lo, hi;
  bool contains(double x) const;
};
// Bounds past +-2^53 (doubles would round them) are refused.
Result<NumberBounds> read_number_bounds(const Json& s, const std::string& path);

// The bounds an enum / const value is held to: its schema's number range and string lengths.
struct ValueBounds {
  NumberBounds numbers;
  std::optional<int64_t> min_length, max_length;
  bool allows(const Json& v) const;
};
Result<ValueBounds> read_value_bounds(const Json& s, const std::string& path);

}  // namespace sgl::grammar
