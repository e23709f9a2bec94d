// JSON numbers in a range as grammar expressions: integers and decimal fractions (no exponent)
// whose value lies within the bounds, exactly.
#pragma once

#include <optional>

#include "grammar/grammar.h"

namespace sgl::grammar {

// One side of a range. The value is taken as its shortest round-trip decimal ("0.1", not the
// double's exact expansion), which is what a validator parsing the output as a double compares.
struct DecimalBound {
  double value = 0;
  bool exclusive = false;
};

// The numbers written `-?natural(.digits)?` (integer_range's integers; a fraction may end in
// zeros) whose decimal value lies between `lo` and `hi` (nullopt: open on that side). With
// `integer_only`, the integers alone. nullopt when no number is in the range. |bounds| <= 2^53.
std::optional<ExprId> decimal_range(Grammar& g, std::optional<DecimalBound> lo,
                                    std::optional<DecimalBound> hi, bool integer_only);

}  // namespace sgl::grammar
