// The structural tag format tree, built into grammar rules.
#include "grammar/structural_tag.h"

#include <algorithm>

#include "grammar/ebnf_parser.h"
#include "grammar/json_schema_compiler.h"
#include "grammar/regex_compiler.h"
#include "grammar/triggered_tags.h"

namespace sgl::grammar {
namespace {

using Type = StructuralFormat::Type;

class FormatBuilder {
 public:
  // An empty schema is any JSON value (not strict: objects keep any properties).
  static Result<Grammar> json_schema(const std::string& schema_json) {
    if (schema_json.empty()) return json_schema_to_grammar("{}", {.strict = false});
    return json_schema_to_grammar(schema_json);
  }

  explicit FormatBuilder(Grammar& g) : g_(g) {}

  Result<ExprId> build(const StructuralFormat& f, const std::string& where, int depth) {
    if (depth > kMaxStructuralDepth) {
      return invalid_argument(where + ": formats nest deeper than " +
                              std::to_string(kMaxStructuralDepth));
    }
    switch (f.type) {
      case Type::kConstString:
        return g_.bytes(f.value);
      case Type::kJsonSchema:
        return imported(json_schema(f.value), where);
      case Type::kGrammar:
        return imported(parse_ebnf(f.value), where);
      case Type::kRegex:
        return imported(regex_to_grammar(f.value), where);
      case Type::kAnyText:
        return any_text(f.strings, "", where);
      case Type::kSequence:
      case Type::kOr: {
        if (f.elements.empty()) return invalid_argument(where + ".elements must not be empty");
        std::vector<ExprId> parts;
        for (size_t i = 0; i < f.elements.size(); ++i) {
          SGL_ASSIGN_OR_RETURN(ExprId part, build(f.elements[i], element(where, i), depth + 1));
          parts.push_back(part);
        }
        return f.type == Type::kSequence ? g_.sequence(std::move(parts))
                                         : g_.choice(std::move(parts));
      }
      case Type::kTag: {
        SGL_ASSIGN_OR_RETURN(ExprId body, tag_body(f, where, depth));
        return g_.sequence({g_.bytes(f.begin), body});
      }
      case Type::kTriggeredTags:
        return triggered_tags(f, where, depth);
      case Type::kTagsWithSeparator:
        return tags_with_separator(f, where, depth);
    }
    return invalid_argument(where + ": unknown format");
  }

 private:
  // `where`'s problem ("" for the first form, whose fields the caller names).
  static Status at(const std::string& where, const std::string& problem) {
    return invalid_argument(where.empty() ? problem : where + ": " + problem);
  }

  static std::string element(const std::string& where, size_t i) {
    return where + ".elements[" + std::to_string(i) + "]";
  }

  Result<ExprId> imported(Result<Grammar> source, const std::string& where) {
    if (!source.ok()) return at(where, source.status().message());
    return g_.ref(g_.import_rules(*source, "f" + std::to_string(next_prefix_++) + "_"));
  }

  // Text without any of `excluded`, then `end` (the first place it is written) if not empty.
  Result<ExprId> any_text(const std::vector<std::string>& excluded, const std::string& end,
                          const std::string& where) {
    std::vector<std::string> triggers = excluded;
    if (!end.empty()) triggers.insert(triggers.begin(), end);
    if (triggers.empty()) return g_.star(g_.char_class({}, /*negated=*/true));
    auto text = add_trigger_text(
        g_, triggers,
        [&](size_t t, RuleId) { return !end.empty() && t == 0 ? g_.empty() : ExprId{-1}; },
        /*may_end=*/end.empty());
    if (!text.ok()) return at(where, text.status().message());
    return g_.ref(*text);
  }

  // A tag's content and end (any_text content runs up to the end's first appearance).
  Result<ExprId> tag_body(const StructuralFormat& tag, const std::string& where, int depth) {
    if (tag.elements.size() != 1) return invalid_argument(where + " needs one 'content'");
    const StructuralFormat& content = tag.elements[0];
    if (content.type == Type::kAnyText) return any_text(content.strings, tag.end, where);
    SGL_ASSIGN_OR_RETURN(ExprId inner, build(content, where + ".content", depth + 1));
    return g_.sequence({inner, g_.bytes(tag.end)});
  }

  Result<std::vector<TriggeredTag>> tags_of(const StructuralFormat& f, const std::string& where,
                                            int depth) {
    if (f.elements.empty()) return invalid_argument(where + ".tags must not be empty");
    std::vector<TriggeredTag> tags;
    for (size_t i = 0; i < f.elements.size(); ++i) {
      const std::string at = where + ".tags[" + std::to_string(i) + "]";
      if (f.elements[i].type != Type::kTag) return invalid_argument(at + " must be a tag");
      SGL_ASSIGN_OR_RETURN(ExprId body, tag_body(f.elements[i], at, depth + 1));
      tags.push_back({f.elements[i].begin, body, ""});
    }
    return tags;
  }

  Result<ExprId> triggered_tags(const StructuralFormat& f, const std::string& where, int depth) {
    SGL_ASSIGN_OR_RETURN(std::vector<TriggeredTag> tags, tags_of(f, where, depth));
    auto text = add_triggered_tags(
        g_, f.strings, tags,
        {.at_least_one = f.at_least_one, .stop_after_first = f.stop_after_first});
    if (!text.ok()) return at(where, text.status().message());
    return g_.ref(*text);
  }

  Result<ExprId> tags_with_separator(const StructuralFormat& f, const std::string& where,
                                     int depth) {
    SGL_ASSIGN_OR_RETURN(std::vector<TriggeredTag> tags, tags_of(f, where, depth));
    const RuleId tag = g_.add_rule(g_.fresh_name("tag"));
    std::vector<ExprId> choices;
    for (const TriggeredTag& t : tags)
      choices.push_back(g_.sequence({g_.bytes(t.begin), t.content}));
    g_.set_body(tag, choices.size() == 1 ? choices[0] : g_.choice(std::move(choices)));
    ExprId some = g_.ref(tag);
    if (!f.stop_after_first) {
      some = g_.sequence({some, g_.star(g_.sequence({g_.bytes(f.separator), g_.ref(tag)}))});
    }
    return f.at_least_one ? some : g_.optional(some);
  }

  Grammar& g_;
  int next_prefix_ = 0;
};

Result<Grammar> format_grammar(const StructuralFormat& format, const std::string& where) {
  Grammar g;
  const RuleId root = g.add_rule("root");
  FormatBuilder builder(g);
  SGL_ASSIGN_OR_RETURN(const ExprId body, builder.build(format, where, 0));
  g.set_body(root, body);
  g.set_root(root);
  return g;
}

}  // namespace

Result<Grammar> structural_tag_grammar(const StructuralFormat& format) {
  return format_grammar(format, "format");
}

Result<Grammar> structural_tag_grammar(const StructuralTagSpec& spec) {
  if (spec.structures.empty()) return invalid_argument("'structures' must not be empty");
  StructuralFormat f{.type = Type::kTriggeredTags, .strings = spec.triggers};
  f.at_least_one = spec.at_least_one;
  for (size_t i = 0; i < spec.structures.size(); ++i) {
    const StructuralTagSpec::Structure& s = spec.structures[i];
    // Checked here, so that the error names the field of this form.
    if (auto schema = FormatBuilder::json_schema(s.schema_json); !schema.ok()) {
      return invalid_argument("structures[" + std::to_string(i) +
                              "].schema: " + schema.status().message());
    }
    StructuralFormat tag{.type = Type::kTag, .begin = s.begin, .end = s.end};
    tag.elements.push_back({.type = Type::kJsonSchema, .value = s.schema_json});
    f.elements.push_back(std::move(tag));
  }
  return format_grammar(f, "");
}

}  // namespace sgl::grammar
