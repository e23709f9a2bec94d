// Grammar IR: rules whose bodies are expression trees over code points and byte strings.
//
// Every front end (EBNF, regex, JSON Schema) builds this IR; the automaton builder
// (automaton.h) turns it into one byte-level automaton per rule. Expressions are nodes in one
// arena owned by the Grammar and referenced by index; a rule is referenced by RuleRef, which is
// how a front end shares a sub-grammar without copying it (an expression used twice is built
// twice by the automaton builder, a rule once).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sgl::grammar {

using ExprId = int32_t;
using RuleId = int32_t;

// A closed range of Unicode code points.
struct CodePointRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
};

enum class ExprKind : uint8_t {
  kBytes,      // a literal byte string ("" is the empty string, epsilon)
  kCharClass,  // one code point in `ranges` (or not in them, when negated), as UTF-8
  kSequence,   // children in order
  kChoice,     // one of the children
  kRuleRef,    // the rule `rule`
  kRepeat,     // child repeated min..max times (max = kUnbounded: no upper bound)
};

inline constexpr int32_t kUnbounded = -1;
inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

struct Expr {
  ExprKind kind = ExprKind::kBytes;
  bool negated = false;                // kCharClass
  RuleId rule = -1;                    // kRuleRef
  int32_t min = 0;                     // kRepeat
  int32_t max = 0;                     // kRepeat
  std::string bytes;                   // kBytes
  std::vector<CodePointRange> ranges;  // kCharClass
  std::vector<ExprId> children;        // kSequence, kChoice, kRepeat (one child)
};

struct Rule {
  std::string name;
  ExprId body = -1;  // -1: declared, not (yet) defined
};

// A grammar under construction or built. Not thread-safe while being built; immutable (and so
// shareable) afterwards.
class Grammar {
 public:
  // Rules: declare by name (returns the existing id when the name is known), then define.
  RuleId add_rule(std::string_view name);
  void set_body(RuleId rule, ExprId body) { rules_[rule].body = body; }
  RuleId find_rule(std::string_view name) const;  // -1 when absent
  // A name not used yet, derived from `base` ("base", "base_1", ...).
  std::string fresh_name(std::string_view base) const;

  ExprId bytes(std::string_view literal);
  ExprId empty() { return bytes(""); }
  ExprId char_class(std::vector<CodePointRange> ranges, bool negated = false);
  ExprId sequence(std::vector<ExprId> children);
  ExprId choice(std::vector<ExprId> children);
  ExprId ref(RuleId rule);
  ExprId repeat(ExprId child, int32_t min, int32_t max);
  ExprId optional(ExprId child) { return repeat(child, 0, 1); }
  // One of `literals` ("" when there are none).
  ExprId one_of(const std::vector<std::string>& literals);
  ExprId star(ExprId child) { return repeat(child, 0, kUnbounded); }
  ExprId plus(ExprId child) { return repeat(child, 1, kUnbounded); }

  // Copies every rule of `src` into this grammar under fresh names starting with `prefix`;
  // returns the rule `src`'s root became (how a JSON Schema's grammar is embedded in another).
  RuleId import_rules(const Grammar& src, std::string_view prefix);

  void set_root(RuleId rule) { root_ = rule; }
  RuleId root() const { return root_; }

  const Expr& expr(ExprId id) const { return exprs_[id]; }
  const Rule& rule(RuleId id) const { return rules_[id]; }
  int32_t num_exprs() const { return static_cast<int32_t>(exprs_.size()); }
  int32_t num_rules() const { return static_cast<int32_t>(rules_.size()); }

  // The grammar in our EBNF syntax (parse_ebnf reads it back to an equivalent grammar).
  std::string to_string() const;
  std::string expr_to_string(ExprId id) const;

 private:
  ExprId add(Expr expr);

  std::vector<Expr> exprs_;
  std::vector<Rule> rules_;
  std::unordered_map<std::string, RuleId> rule_ids_;
  // fresh_name's next suffix per base, so that naming n rules of one base costs O(n).
  mutable std::unordered_map<std::string, int> next_suffix_;
  RuleId root_ = -1;
};

// Sorts and merges overlapping or adjacent ranges; with `negate`, returns the complement over
// [0, kMaxCodePoint].
std::vector<CodePointRange> normalize_ranges(std::vector<CodePointRange> ranges, bool negate);
// The code points in both of two normalized lists, normalized.
std::vector<CodePointRange> intersect_ranges(const std::vector<CodePointRange>& a,
                                             const std::vector<CodePointRange>& b);

}  // namespace sgl::grammar
