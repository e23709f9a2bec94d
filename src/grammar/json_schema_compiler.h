// JSON Schema -> Grammar IR: the grammar of the JSON texts that the schema accepts (a subset of
// them where noted), for `response_format` json_schema, `json_schema` and the free JSON mode.
//
// Supported: type (and unions), properties (in schema order; optional ones may be left out),
// required, additionalProperties (false / true / a schema), items, prefixItems (and draft-7's
// array `items` + additionalItems), minItems, maxItems, enum, const, anyOf, oneOf (as anyOf:
// exact when the branches are disjoint), allOf (merged where expressible), $ref into the document
// ($defs, definitions, any JSON pointer; recursion included), minLength, maxLength, pattern
// (anchored at both ends, as xgrammar / outlines treat it), format (date, time, date-time,
// duration, email, hostname, uuid, uri, ipv4, ipv6), minimum / maximum / exclusiveMinimum /
// exclusiveMaximum (exact on decimal values), nullable (OpenAPI). Descriptive keywords are
// accepted and ignored; any other keyword is an error naming it.
//
// Deliberate narrowings (every generated text still validates, but for a fraction longer than a
// double holds that rounds onto an exclusive bound):
//   - strict (default): a schema that does not say otherwise allows no additional properties
//     and no array items beyond prefixItems (as xgrammar's strict mode and OpenAI's strict mode);
//   - additional property names contain no escapes and differ from the declared ones;
//   - bounded numbers have no exponent; strings are never \u-escaped where a literal character
//     works;
//   - a date's day is at most 28 in February; a hostname has at most eight labels (four of up
//     to 63 characters, or up to eight of up to 30), the last starting with a letter;
//   - a number's exponent has at most two digits (past that most parsers overflow to inf).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/status.h"
#include "grammar/grammar.h"

namespace sgl::grammar {

enum class JsonWhitespace {
  // No whitespace except one optional space after ':' and ',' (both `{"a":1}` and json.dumps'
  // `{"a": 1, "b": 2}`). The default: fewer tokens, and a model cannot loop on whitespace.
  kCompact,
  // Any run of JSON whitespace (space, \t, \n, \r) wherever JSON allows it, up to
  // max_whitespace bytes per run.
  kFlexible,
};

// A regular expression (regex_compiler.h's subset) for the whitespace wherever JSON allows it:
// SGLang's --constrained-json-whitespace-pattern (outlines' and llguidance's whitespace_pattern),
// e.g. "[\n\t ]*". Checked when made; nothing checks that it matches only whitespace.
class JsonWhitespacePattern {
 public:
  static Result<JsonWhitespacePattern> parse(std::string regex);
  const std::string& regex() const { return regex_; }

 private:
  explicit JsonWhitespacePattern(std::string regex) : regex_(std::move(regex)) {}
  std::string regex_;
};

struct JsonSchemaOptions {
  JsonWhitespace whitespace = JsonWhitespace::kCompact;
  int32_t max_whitespace = 32;  // kFlexible only
  // Given: overrides `whitespace`.
  std::optional<JsonWhitespacePattern> whitespace_pattern = std::nullopt;
  bool strict = true;
  // '<' inside strings (and keys) only as the escape \u003c: the text never holds '<', so no
  // markup that closes what the JSON sits in (Qwen3-Coder's "</parameter>") can appear in it.
  bool escape_less_than = false;
};

inline constexpr int kMaxSchemaDepth = 128;

Result<Grammar> json_schema_to_grammar(std::string_view schema_json,
                                       const JsonSchemaOptions& options = {});

// Any JSON object (the `json_object` response format).
Grammar any_json_object_grammar(const JsonSchemaOptions& options = {});

}  // namespace sgl::grammar
