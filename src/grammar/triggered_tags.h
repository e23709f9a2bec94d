// Free text in which triggers open tagged sections: xgrammar's triggered tags (SGLang's
// structural tags, structural_tag.h) and tool calls under tool_choice "auto" with strict tools. The
// text may say anything until it completes a trigger; from there it must go on with one of the tags
// whose begin starts with that trigger, the tag's content and its end, then free text again.
//
// The free text is the trigger automaton (Aho-Corasick over the triggers' code points) written
// as right-linear rules, one a state: `state ::= "" | [^moves] start | c state' | c fire_T`. The
// stack engine returns from tail calls to the caller's parent, so any length of free text keeps
// one frame.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/grammar.h"

namespace sgl::grammar {

struct TriggeredTag {
  std::string begin;  // starts with one of the triggers
  ExprId content;     // the rest of the tag (its end included), in the grammar it is added to
};

struct TriggeredTagsOptions {
  bool at_least_one = false;          // the output starts with a tag (no free text before it)
  bool stop_after_first = false;      // the output ends with its first tag
  std::vector<std::string> excludes;  // strings the free text may not hold
  // Not empty: the text ends where one of these is first written (an enclosing tag's end), and
  // only there; it must not overlap an excluded string.
  std::vector<std::string> ends;
};

inline constexpr size_t kMaxTriggers = 64;
inline constexpr size_t kMaxTriggerCodePoints = 512;  // all triggers together
inline constexpr size_t kMaxTriggerMoves = 1 << 16;   // the automaton's moves off the start

// The automaton alone: free text (rule returned) in which, where trigger t completes, the text
// goes on with after(t, text) (an expression that may refer to the text's own rule; -1: the
// trigger may not be written), and which may end between triggers when `may_end`.
// InvalidArgument: no triggers, an empty one or one that is not UTF-8, past the limits above.
Result<RuleId> add_trigger_text(Grammar& g, const std::vector<std::string>& triggers,
                                const std::function<ExprId(size_t, RuleId)>& after, bool may_end);

// `excluded` may not be written within text that `enders` follow: an excluded string that could
// end inside one of them (it holds one's start as its end, or lies inside it) is refused
// (InvalidArgument), since the automaton would fire it while the ender is written.
Status check_excludes(const std::vector<std::string>& excluded,
                      const std::vector<std::string>& enders);

// Adds the text's rules to `g`; returns the rule of the whole text. InvalidArgument: no
// triggers or tags, an empty trigger or one that is not UTF-8, a tag that begins with no
// trigger or with several (as xgrammar), a trigger that begins no tag, triggers past the limits
// above.
Result<RuleId> add_triggered_tags(Grammar& g, const std::vector<std::string>& triggers,
                                  std::span<const TriggeredTag> tags,
                                  const TriggeredTagsOptions& options);

}  // namespace sgl::grammar
