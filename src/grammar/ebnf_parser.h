// EBNF (GBNF / xgrammar style) text -> Grammar IR.
//
//   root   ::= "{" ws pair ("," ws pair)* "}"   # comments run to the end of the line
//   pair   ::= [a-z]+ ":" value
//   value  ::= [0-9]{1,3} | "null" | ( "x" | [^\x00-\x1F"\\] )+ | .
//
// Rules are `name ::= alternatives`; a rule ends where the next `name ::=` begins, so rules may
// span lines. Names: [A-Za-z_][A-Za-z0-9_.-]*. Literals "..." or '...' and classes [...] take
// the escapes \n \r \t \\ \" \' \[ \] \- \^ \/ \xHH \uHHHH \UHHHHHHHH (all code points, written
// as UTF-8). `.` is any code point. Quantifiers: * + ? {m} {m,} {m,n}.
#pragma once

#include <string_view>

#include "core/status.h"
#include "grammar/grammar.h"

namespace sgl::grammar {

inline constexpr size_t kMaxGrammarTextBytes = 1 << 20;
inline constexpr int kMaxNestingDepth = 128;
inline constexpr int32_t kMaxRepeatBound = 100000;

// Parses `text`; the rule named `root_name` becomes the root. Errors name the line and column.
// Undefined rules and duplicate definitions are errors here; left recursion and an empty
// language are found when the grammar is compiled (build_automaton).
Result<Grammar> parse_ebnf(std::string_view text, std::string_view root_name = "root");

}  // namespace sgl::grammar
