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
  explicit FormatBuilder(Grammar& g) : g_(g) {}

  // `f`, then (when `ends` is not empty) one of the enclosing tag's ends: free text at the end
  // of `f` stops at the first end written.
  Result<ExprId> build(const StructuralFormat& f, const std::string& where, int depth,
                       const std::vector<std::string>& ends) {
    if (depth > kMaxStructuralDepth) {
      return invalid_argument(where + ": formats nest deeper than " +
                              std::to_string(kMaxStructuralDepth));
    }
    SGL_ASSIGN_OR_RETURN(ExprId e, build_one(f, where, depth, ends));
    if (g_.num_exprs() > kMaxStructuralExprs) {
      return invalid_argument(where + ": the structural tag makes a grammar of more than " +
                              std::to_string(kMaxStructuralExprs) + " expressions");
    }
    return e;
  }

 private:
  static Status at(const std::string& where, const std::string& problem) {
    return invalid_argument(where + ": " + problem);
  }

  // An empty schema is any JSON value (not strict: objects keep any properties).
  static Result<Grammar> json_schema(const std::string& schema_json) {
    if (schema_json.empty()) return json_schema_to_grammar("{}", {.strict = false});
    return json_schema_to_grammar(schema_json);
  }

  static std::string element(const std::string& where, size_t i) {
    return where + ".elements[" + std::to_string(i) + "]";
  }

  // Free text can stop at these ends (none empty: an empty end lets the text stop anywhere).
  static bool closing(const std::vector<std::string>& ends) {
    return !ends.empty() &&
           std::none_of(ends.begin(), ends.end(), [](const std::string& e) { return e.empty(); });
  }

  // `e`, then one of `ends` (nothing when there are none).
  ExprId then_end(ExprId e, const std::vector<std::string>& ends) {
    return ends.empty() ? e : g_.sequence({e, g_.one_of(ends)});
  }

  Result<ExprId> build_one(const StructuralFormat& f, const std::string& where, int depth,
                           const std::vector<std::string>& ends) {
    const bool closes = closing(ends);
    switch (f.type) {
      case Type::kConstString:
        return then_end(g_.bytes(f.value), ends);
      case Type::kJsonSchema: {
        SGL_ASSIGN_OR_RETURN(ExprId e, imported(json_schema(f.value), where));
        return then_end(e, ends);
      }
      case Type::kGrammar: {
        SGL_ASSIGN_OR_RETURN(ExprId e, imported(parse_ebnf(f.value), where));
        return then_end(e, ends);
      }
      case Type::kRegex: {
        SGL_ASSIGN_OR_RETURN(ExprId e, imported(regex_to_grammar(f.value), where));
        return then_end(e, ends);
      }
      case Type::kAnyText: {
        if (!closes) {
          SGL_ASSIGN_OR_RETURN(ExprId e, any_text(f.strings, {}, where));
          return then_end(e, ends);
        }
        return any_text(f.strings, ends, where);
      }
      case Type::kSequence: {
        if (f.elements.empty()) return invalid_argument(where + ".elements must not be empty");
        std::vector<ExprId> parts;
        for (size_t i = 0; i < f.elements.size(); ++i) {
          const bool last = i + 1 == f.elements.size();
          SGL_ASSIGN_OR_RETURN(ExprId part, build(f.elements[i], element(where, i), depth + 1,
                                                  last ? ends : std::vector<std::string>{}));
          parts.push_back(part);
        }
        return g_.sequence(std::move(parts));
      }
      case Type::kOr: {
        if (f.elements.empty()) return invalid_argument(where + ".elements must not be empty");
        std::vector<ExprId> branches;
        for (size_t i = 0; i < f.elements.size(); ++i) {
          SGL_ASSIGN_OR_RETURN(ExprId b, build(f.elements[i], element(where, i), depth + 1, ends));
          branches.push_back(b);
        }
        return g_.choice(std::move(branches));
      }
      case Type::kTag: {
        if (f.ends.empty()) return invalid_argument(where + " needs an 'end'");
        if (f.elements.size() != 1) return invalid_argument(where + " needs one 'content'");
        SGL_ASSIGN_OR_RETURN(ExprId body,
                             build(f.elements[0], where + ".content", depth + 1, f.ends));
        return then_end(g_.sequence({g_.bytes(f.begin), body}), ends);
      }
      case Type::kTriggeredTags:
        return triggered_tags(f, where, depth, closes ? ends : std::vector<std::string>{},
                              closes ? std::vector<std::string>{} : ends);
      case Type::kTagsWithSeparator: {
        SGL_ASSIGN_OR_RETURN(ExprId e, tags_with_separator(f, where, depth));
        return then_end(e, ends);
      }
    }
    return invalid_argument(where + ": unknown format");
  }

  Result<ExprId> imported(Result<Grammar> source, const std::string& where) {
    if (!source.ok()) return at(where, source.status().message());
    return g_.ref(g_.import_rules(*source, "f" + std::to_string(next_prefix_++) + "_"));
  }

  // Text without any of `excluded`; with `ends`, up to the first of them written (included).
  Result<ExprId> any_text(const std::vector<std::string>& excluded,
                          const std::vector<std::string>& ends, const std::string& where) {
    if (Status s = check_excludes(excluded, ends); !s.ok()) return at(where, s.message());
    if (excluded.empty() && ends.empty()) return g_.star(g_.char_class({}, /*negated=*/true));
    std::vector<std::string> strings = excluded;
    strings.insert(strings.end(), ends.begin(), ends.end());
    auto text = add_trigger_text(
        g_, strings,
        [&](size_t t, RuleId) { return t >= excluded.size() ? g_.empty() : ExprId{-1}; },
        /*may_end=*/ends.empty());
    if (!text.ok()) return at(where, text.status().message());
    return g_.ref(*text);
  }

  Result<std::vector<TriggeredTag>> tags_of(const StructuralFormat& f, const std::string& where,
                                            int depth) {
    if (f.elements.empty()) return invalid_argument(where + ".tags must not be empty");
    std::vector<TriggeredTag> tags;
    for (size_t i = 0; i < f.elements.size(); ++i) {
      const std::string tag_where = where + ".tags[" + std::to_string(i) + "]";
      const StructuralFormat& tag = f.elements[i];
      if (tag.type != Type::kTag) return invalid_argument(tag_where + " must be a tag");
      if (tag.ends.empty()) return invalid_argument(tag_where + " needs an 'end'");
      if (tag.elements.size() != 1) return invalid_argument(tag_where + " needs one 'content'");
      SGL_ASSIGN_OR_RETURN(ExprId body,
                           build(tag.elements[0], tag_where + ".content", depth + 2, tag.ends));
      tags.push_back({tag.begin, body});
    }
    return tags;
  }

  // `closing_ends`: the enclosing tag's ends, which end the free text; `after`: ends that
  // follow the whole structure instead (empty ones, which free text cannot stop at).
  Result<ExprId> triggered_tags(const StructuralFormat& f, const std::string& where, int depth,
                                const std::vector<std::string>& closing_ends,
                                const std::vector<std::string>& after) {
    SGL_ASSIGN_OR_RETURN(std::vector<TriggeredTag> tags, tags_of(f, where, depth));
    auto text = add_triggered_tags(g_, f.strings, tags,
                                   {.at_least_one = f.at_least_one,
                                    .stop_after_first = f.stop_after_first,
                                    .excludes = f.excludes,
                                    .ends = closing_ends});
    if (!text.ok()) return at(where, text.status().message());
    return then_end(g_.ref(*text), after);
  }

  Result<ExprId> tags_with_separator(const StructuralFormat& f, const std::string& where,
                                     int depth) {
    SGL_ASSIGN_OR_RETURN(std::vector<TriggeredTag> tags, tags_of(f, where, depth));
    const RuleId tag = g_.add_rule(g_.fresh_name("tag"));
    std::vector<ExprId> choices;
    for (const TriggeredTag& t : tags) {
      choices.push_back(g_.sequence({g_.bytes(t.begin), t.content}));
    }
    g_.set_body(tag, g_.choice(std::move(choices)));
    ExprId some = g_.ref(tag);
    if (!f.stop_after_first) {
      some = g_.sequence({some, g_.star(g_.sequence({g_.bytes(f.separator), g_.ref(tag)}))});
    }
    return f.at_least_one ? some : g_.optional(some);
  }

  Grammar& g_;
  int next_prefix_ = 0;
};

// `g` with root `root` := body.
Grammar rooted(Grammar g, ExprId body) {
  const RuleId root = g.add_rule("root");
  g.set_body(root, body);
  g.set_root(root);
  return g;
}

}  // namespace

Result<Grammar> structural_tag_grammar(const StructuralFormat& format) {
  Grammar g;
  FormatBuilder builder(g);
  SGL_ASSIGN_OR_RETURN(const ExprId body, builder.build(format, "format", 0, {}));
  return rooted(std::move(g), body);
}

Result<Grammar> structural_tag_grammar(const StructuralTagSpec& spec) {
  if (spec.structures.empty()) return invalid_argument("'structures' must not be empty");
  Grammar g;
  FormatBuilder builder(g);
  std::vector<TriggeredTag> tags;
  for (size_t i = 0; i < spec.structures.size(); ++i) {
    const StructuralTagSpec::Structure& s = spec.structures[i];
    StructuralFormat schema;
    schema.type = Type::kJsonSchema;
    schema.value = s.schema_json;
    SGL_ASSIGN_OR_RETURN(
        const ExprId body,
        builder.build(schema, "structures[" + std::to_string(i) + "].schema", 1, {s.end}));
    tags.push_back({s.begin, body});
  }
  TriggeredTagsOptions options;
  options.at_least_one = spec.at_least_one;
  SGL_ASSIGN_OR_RETURN(const RuleId text, add_triggered_tags(g, spec.triggers, tags, options));
  const ExprId body = g.ref(text);
  return rooted(std::move(g), body);
}

}  // namespace sgl::grammar
