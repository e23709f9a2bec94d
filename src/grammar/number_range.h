// Decimal integer ranges as grammar expressions: the JSON integers in [lo, hi], written without
// leading zeros (and never "-0"), exactly.
#pragma once

#include <cstdint>
#include <optional>

#include "grammar/grammar.h"

namespace sgl::grammar {

// nullopt: unbounded on that side. Requires lo <= hi when both are set.
ExprId integer_range(Grammar& g, std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace sgl::grammar
