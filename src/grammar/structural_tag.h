// SGLang's structural_tag response format as a grammar: xgrammar's format tree (const_string,
// json_schema, grammar, regex, any_text, sequence, or, tag, triggered_tags,
// tags_with_separator) and SGLang's first form (structures opened by triggers), which is one
// triggered_tags format. The request's JSON is read by the server into these structs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/grammar.h"

namespace sgl::grammar {

struct StructuralFormat {
  enum class Type : uint8_t {
    kConstString,       // value: the text, exactly
    kJsonSchema,        // value: the schema's JSON (empty: any JSON value)
    kGrammar,           // value: EBNF (root `root`)
    kRegex,             // value: the pattern
    kAnyText,           // any text without `strings` (ending a tag: up to the tag's end)
    kSequence,          // elements, in order
    kOr,                // one of elements
    kTag,               // begin, elements[0] (the content), one of ends
    kTriggeredTags,     // free text in which `strings` (triggers) open elements (tags)
    kTagsWithSeparator  // elements (tags) separated by `separator`, nothing else
  };
  Type type = Type::kConstString;
  std::string value;
  std::vector<std::string> strings;   // any_text: excluded; triggered_tags: triggers
  std::vector<std::string> excludes;  // triggered_tags: strings its free text may not hold
  std::string begin;                  // tag
  std::vector<std::string> ends;      // tag: one or more
  std::string separator;              // tags_with_separator
  std::vector<StructuralFormat> elements;
  bool at_least_one = false;      // triggered_tags: start with a tag; tags_with_separator: one+
  bool stop_after_first = false;  // end after the first tag
};

inline constexpr int kMaxStructuralDepth = 32;
inline constexpr int32_t kMaxStructuralExprs = 1 << 20;  // the grammar built, in expressions

// The whole grammar (root `root`). Free text that ends a tag (any_text, triggered_tags, as the
// tag's content, the last element of a sequence there, or an `or`'s branch there) runs up to the
// tag's end, as xgrammar does: the end closes it where it is first written. InvalidArgument
// naming where (format.elements[1]...) for an empty sequence, or, or tag list, a tag list entry
// that is not a tag, a tag without an end, a schema, grammar or regex the engine does not
// support, the triggered tags' errors (triggered_tags.h), nesting past kMaxStructuralDepth or a
// grammar past kMaxStructuralExprs.
Result<Grammar> structural_tag_grammar(const StructuralFormat& format);

// SGLang's first form: structures of begin, JSON Schema (empty: any JSON value) and end,
// opened by triggers.
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

// The first form, as the triggered_tags of json_schema tags it is; InvalidArgument as above,
// naming 'structures' and structures[i].schema.
Result<Grammar> structural_tag_grammar(const StructuralTagSpec& spec);

}  // namespace sgl::grammar
