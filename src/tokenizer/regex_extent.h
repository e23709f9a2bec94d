// How far past its start a match of a Python-syntax pattern can look, so that a stop regex is
// searched only where a new match can be (StopRegexMatcher) instead of over the whole output.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace sgl::tokenizer {

// The most bytes of a subject that a match of `pattern` (Python `re` syntax, as Regex compiles it
// with RegexSyntax::kPython) examines from the match's start: its own bytes (each pattern atom
// counted as one code point of up to 4 bytes), what lookaheads read, and a character either side
// of anchors that test their neighbourhood ($, \b, \Z). A bound, never an underestimate: nullopt
// where the pattern is unbounded (*, +, {m,}) or uses a construct not analysed here
// (backreferences, conditionals, recursion, verbose mode, escapes outside a short list), so the
// caller searches everything.
std::optional<size_t> max_match_extent(std::string_view pattern);

}  // namespace sgl::tokenizer
