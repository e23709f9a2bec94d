// String lengths (minLength / maxLength) beside a pattern or format: the lengths a JSON string
// content expression can have, and that expression held to a length range where that is
// expressible without intersecting automata.
#pragma once

#include <cstdint>
#include <optional>

#include "core/status.h"
#include "grammar/grammar.h"

namespace sgl::grammar {

// Lengths in decoded characters (code points; an escape such as \n or \u003c is one).
struct LengthRange {
  int64_t min = 0;
  std::optional<int64_t> max;  // nullopt: unbounded
};

// The lengths of the strings `content` (JSON string content, escapes included) writes; nullopt
// when it refers to a rule.
std::optional<LengthRange> content_length(const Grammar& g, ExprId content);

// `content` restricted to lengths in [lo, hi] (hi nullopt: unbounded): itself when all its
// lengths lie within; else its one part of varying length, a repetition of single characters,
// with its bounds narrowed. An error when no length lies within, or when the length varies in
// more than one place (refused rather than loosened).
Result<ExprId> restrict_length(Grammar& g, ExprId content, int64_t lo, std::optional<int64_t> hi);

}  // namespace sgl::grammar
