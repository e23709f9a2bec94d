// Free text in which triggers open tagged sections: SGLang's structural tags (xgrammar's
// triggered tags) and tool calls under tool_choice "auto" with strict tools. The text may say
// anything until it completes a trigger; from there it must go on with one of the tags whose
// begin starts with that trigger, the tag's content and its end, then free text again.
//
// The free text is the trigger automaton (Aho-Corasick over the triggers' code points) written
// as right-linear rules, one a state: `state ::= "" | [^moves] start | c state' | c fire_T`. The
// stack engine returns from tail calls to the caller's parent, so any length of free text keeps
// one frame.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/grammar.h"

namespace sgl::grammar {

struct TriggeredTag {
  std::string begin;  // starts with one of the triggers
  ExprId content;     // an expression of the grammar the tags are added to
  std::string end;
};

struct TriggeredTagsOptions {
  bool at_least_one = false;      // the output starts with a tag (no free text before it)
  bool stop_after_first = false;  // the output ends with its first tag
};

inline constexpr size_t kMaxTriggers = 64;
inline constexpr size_t kMaxTriggerCodePoints = 512;  // all triggers together
inline constexpr size_t kMaxTriggerMoves = 1 << 16;   // the automaton's moves off the start

// Adds the text's rules to `g`; returns the rule of the whole text. InvalidArgument: no
// triggers or tags, an empty trigger or one that is not UTF-8, a tag that begins with no
// trigger or with several (as xgrammar), a trigger that begins no tag, triggers past the limits
// above.
Result<RuleId> add_triggered_tags(Grammar& g, const std::vector<std::string>& triggers,
                                  std::span<const TriggeredTag> tags,
                                  const TriggeredTagsOptions& options);

// SGLang's structural_tag response format (its first form): structures of begin, JSON Schema
// (empty: any JSON value) and end, opened by triggers.
struct StructuralTagSpec {
  struct Structure {
    std::string begin;
    std::string schema_json;
    std::string end;
  };
  std::vector<Structure> structures;
  std::vector<std::string> triggers;
  bool at_least_one = false;
};

// The whole grammar (root `root`); InvalidArgument as above or for a schema the engine does not
// support (naming structures[i]).
Result<Grammar> structural_tag_grammar(const StructuralTagSpec& spec);

}  // namespace sgl::grammar
