// Regular expressions (the subset users send in `regex` fields and JSON Schema `pattern`s) ->
// Grammar IR. The whole string must match (as SGLang / xgrammar treat a constraint regex).
//
// Supported: literals (UTF-8), `.` (any code point but \n), classes [...] / [^...] with ranges
// and escapes, \d \w \s \D \W \S (ASCII, as PCRE2 without UCP), \n \r \t \f \v \0 \a \e \xHH
// \x{H..} \uHHHH and escaped punctuation, groups ( ), (?: ), (?<name> ), (?P<name> ),
// alternation |, quantifiers * + ? {m} {m,} {m,n} (lazy `?` suffixes accepted and treated as
// greedy: the language is the same), ^ at the start and $ at the end of the pattern (or of a
// top-level alternative). Refused with an error naming the construct: backreferences,
// lookaround, word boundaries, atomic groups, possessive quantifiers, inline flags, Unicode
// properties, POSIX classes, anchors elsewhere.
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "grammar/grammar.h"

namespace sgl::grammar {

struct RegexOptions {
  // Match the regex against a JSON string's decoded value while producing its JSON-encoded
  // content: `"`, `\` and control characters are produced as escapes (\" \\ \n \r \t \b \f,
  // others \u00xx). The other code points are produced as themselves (never \u-escaped).
  bool json_string = false;
  // json_string only: '<' too is produced as an escape (\u003c), so the content never holds
  // markup such as "</parameter>" (JsonSchemaOptions::escape_less_than).
  bool escape_less_than = false;
};

// The code points JSON-string mode produces as escapes (normalized): control characters, '"'
// and '\\', and '<' with escape_less_than. The JSON schema compiler's strings take the same set.
std::vector<CodePointRange> json_escaped_chars(bool escape_less_than);

// Adds the pattern's language to `grammar`; returns its expression.
Result<ExprId> compile_regex(Grammar& grammar, std::string_view pattern,
                             const RegexOptions& options = {});

// A grammar whose root rule is the pattern.
Result<Grammar> regex_to_grammar(std::string_view pattern);

}  // namespace sgl::grammar
