// JSON Schema -> Grammar IR.
#include "grammar/json_schema_compiler.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/ordered_json.h"
#include "grammar/decimal_range.h"
#include "grammar/ebnf_parser.h"
#include "grammar/json_schema_document.h"
#include "grammar/json_schema_keywords.h"
#include "grammar/regex_compiler.h"
#include "grammar/string_length.h"
#include "grammar/utf8.h"

namespace sgl::grammar {
namespace {

class SchemaCompiler {
 public:
  SchemaCompiler(const Json& root, const JsonSchemaOptions& options)
      : root_(root), options_(options) {}

  Result<Grammar> compile_document() {
    const RuleId root = g_.add_rule("root");
    SGL_ASSIGN_OR_RETURN(ExprId body, compile(root_, "", 0));
    g_.set_body(root, body);
    g_.set_root(root);
    return std::move(g_);
  }

  Grammar any_object_document() {
    const RuleId root = g_.add_rule("root");
    g_.set_body(root, any_object());
    g_.set_root(root);
    return std::move(g_);
  }

 private:
  static Status error(const std::string& path, const std::string& reason) {
    return schema_error(path, reason);
  }

  // --- whitespace and the generic JSON rules -------------------------------------------------

  // Inside brackets and before ',' / ':'.
  ExprId ws_inner() {
    if (options_.whitespace_pattern) return ws_pattern();
    if (options_.whitespace == JsonWhitespace::kCompact) return g_.empty();
    return ws_run();
  }
  // After ',' and ':'.
  ExprId ws_sep() {
    if (options_.whitespace_pattern) return ws_pattern();
    if (options_.whitespace == JsonWhitespace::kCompact) return g_.optional(g_.bytes(" "));
    return ws_run();
  }
  ExprId ws_pattern() {
    return g_.ref(shared_rule("json_whitespace", [this] {
      auto e = compile_regex(g_, options_.whitespace_pattern->regex());
      SGL_CHECK(e.ok()) << "JsonWhitespacePattern::parse checked it: " << e.status().message();
      return *e;
    }));
  }
  ExprId ws_run() {
    const ExprId c = g_.char_class({{'\t', '\n'}, {'\r', '\r'}, {' ', ' '}});
    return g_.repeat(c, 0, options_.max_whitespace > 0 ? options_.max_whitespace : kUnbounded);
  }
  ExprId comma() { return g_.sequence({ws_inner(), g_.bytes(","), ws_sep()}); }
  ExprId colon() { return g_.sequence({ws_inner(), g_.bytes(":"), ws_sep()}); }

  RuleId shared_rule(const std::string& name, const std::function<ExprId()>& body) {
    RuleId r = g_.find_rule(name);
    if (r >= 0) return r;
    r = g_.add_rule(name);
    g_.set_body(r, body());
    return r;
  }

  // The code points a string holds only as escapes.
  std::vector<CodePointRange> escaped_chars() const {
    return json_escaped_chars(options_.escape_less_than);
  }

  // One character of a JSON string's content: plain, or an escape (no lone surrogates).
  ExprId string_char() {
    return g_.ref(shared_rule("json_char", [&] {
      const ExprId hex = g_.char_class({{'0', '9'}, {'A', 'F'}, {'a', 'f'}});
      const ExprId u = g_.sequence(
          {g_.bytes("u"),
           g_.choice(
               {g_.sequence(
                    {g_.char_class({{'0', '9'}, {'A', 'C'}, {'E', 'F'}, {'a', 'c'}, {'e', 'f'}}),
                     hex, hex, hex}),
                g_.sequence({g_.char_class({{'D', 'D'}, {'d', 'd'}}), g_.char_class({{'0', '7'}}),
                             hex, hex})})});
      return g_.choice({g_.char_class(escaped_chars(), true),
                        g_.sequence({g_.bytes("\\"), g_.choice({g_.char_class({{'"', '"'},
                                                                               {'\\', '\\'},
                                                                               {'/', '/'},
                                                                               {'b', 'b'},
                                                                               {'f', 'f'},
                                                                               {'n', 'n'},
                                                                               {'r', 'r'},
                                                                               {'t', 't'}}),
                                                                u})})});
    }));
  }
  ExprId any_string() {
    return g_.ref(shared_rule("json_string", [&] {
      return g_.sequence({g_.bytes("\""), g_.star(string_char()), g_.bytes("\"")});
    }));
  }
  ExprId any_integer() {
    return g_.ref(shared_rule("json_integer", [&] {
      return g_.sequence({g_.optional(g_.bytes("-")),
                          g_.choice({g_.bytes("0"), g_.sequence({g_.char_class({{'1', '9'}}),
                                                                 g_.star(digit())})})});
    }));
  }
  ExprId digit() { return g_.char_class({{'0', '9'}}); }
  ExprId any_number() {
    return g_.ref(shared_rule("json_number", [&] {
      return g_.sequence(
          {any_integer(), g_.optional(g_.sequence({g_.bytes("."), g_.plus(digit())})),
           g_.optional(g_.sequence({g_.char_class({{'E', 'E'}, {'e', 'e'}}),
                                    g_.optional(g_.char_class({{'+', '+'}, {'-', '-'}})),
                                    g_.repeat(digit(), 1, 2)}))});
    }));
  }
  ExprId any_value() {
    const RuleId value = g_.find_rule("json_value");
    if (value >= 0) return g_.ref(value);
    const RuleId r = g_.add_rule("json_value");
    const RuleId object = g_.add_rule("json_object");
    const RuleId array = g_.add_rule("json_array");
    g_.set_body(r, g_.choice({g_.ref(object), g_.ref(array), any_string(), any_number(),
                              g_.bytes("true"), g_.bytes("false"), g_.bytes("null")}));
    const ExprId member = g_.sequence({any_string(), colon(), g_.ref(r)});
    g_.set_body(
        object,
        g_.sequence({g_.bytes("{"), ws_inner(),
                     g_.optional(g_.sequence({member, g_.star(g_.sequence({comma(), member}))})),
                     ws_inner(), g_.bytes("}")}));
    g_.set_body(array, g_.sequence({g_.bytes("["), ws_inner(),
                                    g_.optional(g_.sequence(
                                        {g_.ref(r), g_.star(g_.sequence({comma(), g_.ref(r)}))})),
                                    ws_inner(), g_.bytes("]")}));
    return g_.ref(r);
  }
  ExprId any_object() {
    any_value();
    return g_.ref(g_.find_rule("json_object"));
  }

  ExprId literal(const Json& v) {
    std::string text = v.dump();
    if (options_.escape_less_than) {  // '<' occurs only inside the strings of JSON text
      for (size_t at = text.find('<'); at != std::string::npos; at = text.find('<', at)) {
        text.replace(at, 1, "\\u003c");
      }
    }
    return g_.bytes(text);
  }

  // --- schemas ---------------------------------------------------------------------------------

  Result<const Json*> resolve(const std::string& ref, const std::string& path) const {
    return resolve_ref(root_, ref, path);
  }

  Result<ExprId> compile_ref(const std::string& ref, const std::string& path) {
    auto it = ref_rules_.find(ref);
    if (it != ref_rules_.end()) return g_.ref(it->second);
    SGL_ASSIGN_OR_RETURN(const Json* target, resolve(ref, path));
    std::string base = ref.substr(ref.rfind('/') + 1);
    for (char& c : base) {
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    const RuleId rule = g_.add_rule(g_.fresh_name("ref_" + base));
    ref_rules_[ref] = rule;  // before compiling: recursive references find it
    SGL_ASSIGN_OR_RETURN(ExprId body, compile(*target, ref.substr(1), 0));
    g_.set_body(rule, body);
    return g_.ref(rule);
  }

  static bool has_constraints(const Json& s, const std::set<std::string>& except) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (!is_descriptive_keyword(it.key()) && !except.count(it.key())) return true;
    }
    return false;
  }

  // Whether compiling `s` merges schemas, which inlines the references among them: allOf, $ref
  // with constraining siblings, anyOf / oneOf with constraining siblings.
  static bool merges_schemas(const Json& s) {
    if (s.contains("$ref")) return has_constraints(s, {"$ref"});
    if (s.contains("allOf")) return true;
    for (const char* key : {"anyOf", "oneOf"}) {
      if (s.contains(key)) return has_constraints(without(s, {key}), {});
    }
    return false;
  }

  // A merging schema compiles once, as a rule keyed by its text: in a recursive type (Pydantic
  // v1's `allOf: [{"$ref": ...}]` beside a description, OpenAPI's `$ref` beside `nullable`) the
  // inlined target holds the same schema again, which then refers back to the rule instead of
  // inlining itself until the depth limit.
  Result<ExprId> compile_merging(const Json& s, const std::string& path, int depth) {
    std::string key = s.dump();
    if (auto it = merged_rules_.find(key); it != merged_rules_.end()) return g_.ref(it->second);
    const RuleId rule = g_.add_rule(g_.fresh_name("merged"));
    merged_rules_.emplace(std::move(key), rule);
    SGL_ASSIGN_OR_RETURN(ExprId body, compile_combinator(s, path, depth));
    g_.set_body(rule, body);
    return g_.ref(rule);
  }

  // $ref, allOf, anyOf, oneOf.
  Result<ExprId> compile_combinator(const Json& s, const std::string& path, int depth) {
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) return error(path, "$ref must be a string");
      if (!has_constraints(s, {"$ref"})) return compile_ref(s["$ref"].get<std::string>(), path);
      // Siblings of $ref constrain it too (2019-09+): merge them into the target.
      SGL_ASSIGN_OR_RETURN(const Json* target, resolve(s["$ref"].get<std::string>(), path));
      SGL_ASSIGN_OR_RETURN(Json merged, merge_schemas(root_, without(s, {"$ref"}), *target, path,
                                                      depth, schemas_compiled_));
      return compile(merged, path, depth + 1);
    }
    if (s.contains("allOf")) {
      const Json& all = s["allOf"];
      if (!all.is_array() || all.empty()) return error(path, "allOf must be a non-empty array");
      Json merged = without(s, {"allOf"});
      for (size_t i = 0; i < all.size(); ++i) {
        SGL_ASSIGN_OR_RETURN(
            merged, merge_schemas(root_, merged, all[i], path + "/allOf/" + std::to_string(i),
                                  depth, schemas_compiled_));
      }
      return compile(merged, path, depth + 1);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      const Json& branches = s[key];
      if (!branches.is_array() || branches.empty()) {
        return error(path, std::string(key) + " must be a non-empty array");
      }
      const Json rest = without(s, {key});
      const bool constrained = has_constraints(rest, {});
      std::vector<ExprId> alts;
      for (size_t i = 0; i < branches.size(); ++i) {
        const std::string p = path + "/" + key + "/" + std::to_string(i);
        if (constrained) {
          SGL_ASSIGN_OR_RETURN(
              Json merged, merge_schemas(root_, rest, branches[i], p, depth, schemas_compiled_));
          SGL_ASSIGN_OR_RETURN(ExprId e, compile(merged, p, depth + 1));
          alts.push_back(e);
        } else {
          SGL_ASSIGN_OR_RETURN(ExprId e, compile(branches[i], p, depth + 1));
          alts.push_back(e);
        }
      }
      return g_.choice(std::move(alts));
    }
    return error(path, "not a combinator");  // unreachable: compile() checks
  }

  Result<ExprId> compile(const Json& s, const std::string& path, int depth) {
    if (depth > kMaxSchemaDepth) return error(path, "schema nested too deeply");
    if (++schemas_compiled_ > kMaxSchemaWork) return error(path, "schema too large");
    if (s.is_boolean()) {
      if (s.get<bool>()) return any_value();
      return error(path, "the schema 'false' accepts no value");
    }
    if (!s.is_object()) return error(path, "a schema must be an object or a boolean");
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (!is_descriptive_keyword(it.key()) && !is_supported_keyword(it.key())) {
        return error(path, "unsupported keyword '" + it.key() + "'");
      }
    }
    // Annotations only ({} or {"description": ...}) constrain nothing: any value, as `true`.
    if (!has_constraints(s, {})) return any_value();
    if (s.contains("$ref") || s.contains("allOf") || s.contains("anyOf") || s.contains("oneOf")) {
      return merges_schemas(s) ? compile_merging(s, path, depth)
                               : compile_combinator(s, path, depth);
    }
    SGL_ASSIGN_OR_RETURN(std::vector<std::string> types, types_of(s, path));
    const bool nullable =
        s.contains("nullable") && s["nullable"].is_boolean() && s["nullable"].get<bool>();
    if (s.contains("enum") && (!s["enum"].is_array() || s["enum"].empty())) {
      return error(path, "enum must be a non-empty array");
    }
    if (s.contains("const")) {
      if (s.contains("enum") &&
          std::find(s["enum"].begin(), s["enum"].end(), s["const"]) == s["enum"].end()) {
        return error(path, "const is not one of the enum's values: no value is allowed");
      }
      return filtered_literals(s, Json::array({s["const"]}), types, nullable, path);
    }
    if (s.contains("enum")) return filtered_literals(s, s["enum"], types, nullable, path);
    std::vector<ExprId> alts;
    for (const std::string& t : types) {
      SGL_ASSIGN_OR_RETURN(ExprId e, compile_typed(s, t, path, depth));
      alts.push_back(e);
    }
    if (nullable && std::find(types.begin(), types.end(), "null") == types.end()) {
      alts.push_back(g_.bytes("null"));
    }
    return g_.choice(std::move(alts));
  }

  // The enum / const values of `s` that its type and its bounds beside them allow (numbers'
  // minimum / maximum, strings' minLength / maxLength); other constraints beside a value list
  // are refused rather than left unchecked.
  Result<ExprId> filtered_literals(const Json& s, const Json& values,
                                   const std::vector<std::string>& types, bool nullable,
                                   const std::string& path) {
    static const std::set<std::string> kBeside = {"enum",
                                                  "const",
                                                  "type",
                                                  "nullable",
                                                  "minimum",
                                                  "maximum",
                                                  "exclusiveMinimum",
                                                  "exclusiveMaximum",
                                                  "minLength",
                                                  "maxLength"};
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (!is_descriptive_keyword(it.key()) && !kBeside.count(it.key())) {
        return error(path, "'" + it.key() + "' beside enum / const is not supported");
      }
    }
    SGL_ASSIGN_OR_RETURN(const ValueBounds bounds, read_value_bounds(s, path));
    std::vector<ExprId> alts;
    for (const Json& v : values) {
      bool ok = (nullable && v.is_null());
      for (const std::string& t : types) ok = ok || type_allows(t, v);
      if (ok && bounds.allows(v)) alts.push_back(literal(v));
    }
    if (alts.empty()) {
      return error(path, "no enum / const value has the schema's type and bounds");
    }
    return g_.choice(std::move(alts));
  }

  // The types the schema allows: `type`, or inferred from its keywords, or all of them.
  Result<std::vector<std::string>> types_of(const Json& s, const std::string& path) {
    static const std::set<std::string> kTypes = {"null",   "boolean", "object", "array",
                                                 "number", "integer", "string"};
    std::vector<std::string> types;
    if (s.contains("type")) {
      const Json& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const Json& x : t) {
          if (!x.is_string()) return error(path, "type must be a string or an array of strings");
          types.push_back(x.get<std::string>());
        }
      } else {
        return error(path, "type must be a string or a non-empty array of strings");
      }
      for (const std::string& x : types) {
        if (!kTypes.count(x)) return error(path, "unknown type '" + x + "'");
      }
      return types;
    }
    if (s.contains("const") || s.contains("enum"))
      return std::vector<std::string>(kTypes.begin(), kTypes.end());
    auto any_of = [&](std::initializer_list<const char*> keys) {
      for (const char* k : keys) {
        if (s.contains(k)) return true;
      }
      return false;
    };
    if (any_of({"properties", "required", "additionalProperties"})) types.push_back("object");
    if (any_of({"items", "prefixItems", "minItems", "maxItems", "additionalItems"})) {
      types.push_back("array");
    }
    if (any_of({"minLength", "maxLength", "pattern", "format"})) types.push_back("string");
    if (any_of({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) {
      types.push_back("number");
    }
    if (types.empty()) types = {"object", "array", "string", "number", "boolean", "null"};
    return types;
  }

  Result<ExprId> compile_typed(const Json& s, const std::string& type, const std::string& path,
                               int depth) {
    if (type == "null") return g_.bytes("null");
    if (type == "boolean") return g_.choice({g_.bytes("true"), g_.bytes("false")});
    if (type == "string") return compile_string(s, path);
    if (type == "integer" || type == "number") return compile_number(s, type == "integer", path);
    if (type == "array") return compile_array(s, path, depth);
    return compile_object(s, path, depth);
  }

  Result<ExprId> compile_string(const Json& s, const std::string& path) {
    SGL_ASSIGN_OR_RETURN(auto min_len, read_count(s, "minLength", path));
    SGL_ASSIGN_OR_RETURN(auto max_len, read_count(s, "maxLength", path));
    const bool lengths = min_len || max_len;
    if (min_len && max_len && *max_len < *min_len) {
      return error(path, "maxLength is below minLength");
    }
    if (s.contains("format") || s.contains("pattern")) {
      if (s.contains("format") && s.contains("pattern")) {
        return error(path, "format together with pattern is not supported");
      }
      std::string regex;
      if (s.contains("pattern")) {
        if (!s["pattern"].is_string()) return error(path, "pattern must be a string");
        regex = s["pattern"].get<std::string>();
      } else {
        if (!s["format"].is_string()) return error(path, "format must be a string");
        const std::string format = s["format"].get<std::string>();
        const std::optional<std::string_view> format_pattern = format_regex(format);
        if (!format_pattern) return error(path, "unsupported format '" + format + "'");
        regex = *format_pattern;
      }
      RegexOptions options;
      options.json_string = true;
      options.escape_less_than = options_.escape_less_than;
      auto e = compile_regex(g_, regex, options);
      if (!e.ok()) return error(path, "pattern: " + e.status().message());
      ExprId content = *e;
      if (lengths) {
        auto held = restrict_length(g_, content, min_len.value_or(0), max_len);
        if (!held.ok()) return error(path, held.status().message());
        content = *held;
      }
      return g_.sequence({g_.bytes("\""), content, g_.bytes("\"")});
    }
    const int32_t lo = static_cast<int32_t>(min_len.value_or(0));
    const int32_t hi = max_len ? static_cast<int32_t>(*max_len) : kUnbounded;
    if (!lengths) return any_string();
    return g_.sequence({g_.bytes("\""), g_.repeat(string_char(), lo, hi), g_.bytes("\"")});
  }

  Result<ExprId> compile_number(const Json& s, bool integer, const std::string& path) {
    SGL_ASSIGN_OR_RETURN(const NumberBounds bounds, read_number_bounds(s, path));
    if (!bounds.lo.value && !bounds.hi.value) return integer ? any_integer() : any_number();
    auto side = [](const NumberBound& b) {
      return b.value ? std::optional<DecimalBound>(DecimalBound{*b.value, b.exclusive})
                     : std::nullopt;
    };
    const std::optional<ExprId> range =
        decimal_range(g_, side(bounds.lo), side(bounds.hi), integer);
    if (!range) {
      return error(path, integer ? "no integer lies within minimum / maximum"
                                 : "no number lies within minimum / maximum");
    }
    return *range;
  }

  Result<ExprId> compile_array(const Json& s, const std::string& path, int depth) {
    if (s.contains("uniqueItems") && s["uniqueItems"] == true) {
      return error(path, "unsupported keyword 'uniqueItems' (true)");
    }
    std::vector<ExprId> prefix;
    const Json* prefix_schemas = nullptr;
    const Json* rest = nullptr;  // the schema of the items after the prefix; null: the default
    std::string rest_path;
    if (s.contains("prefixItems")) {
      if (!s["prefixItems"].is_array()) return error(path, "prefixItems must be an array");
      prefix_schemas = &s["prefixItems"];
      if (s.contains("items")) {
        rest = &s["items"];
        rest_path = path + "/items";
      }
    } else if (s.contains("items") && s["items"].is_array()) {
      prefix_schemas = &s["items"];
      if (s.contains("additionalItems")) {
        rest = &s["additionalItems"];
        rest_path = path + "/additionalItems";
      }
    } else if (s.contains("items")) {
      rest = &s["items"];
      rest_path = path + "/items";
    }
    if (prefix_schemas != nullptr) {
      for (size_t i = 0; i < prefix_schemas->size(); ++i) {
        SGL_ASSIGN_OR_RETURN(
            ExprId e,
            compile((*prefix_schemas)[i], path + "/prefixItems/" + std::to_string(i), depth + 1));
        prefix.push_back(e);
      }
    }
    // The item after the prefix: a rule (it repeats), or none.
    std::optional<ExprId> item;
    if (rest == nullptr) {
      if (!options_.strict || prefix_schemas == nullptr) item = any_value();
    } else if (!(rest->is_boolean() && !rest->get<bool>())) {
      SGL_ASSIGN_OR_RETURN(ExprId e, compile(*rest, rest_path, depth + 1));
      const RuleId r = g_.add_rule(g_.fresh_name("item"));
      g_.set_body(r, e);
      item = g_.ref(r);
    }
    SGL_ASSIGN_OR_RETURN(auto min_items, read_count(s, "minItems", path));
    SGL_ASSIGN_OR_RETURN(auto max_items, read_count(s, "maxItems", path));
    const int64_t k = static_cast<int64_t>(prefix.size());
    const int64_t lo = min_items.value_or(0);
    int64_t hi = max_items ? *max_items : -1;  // -1: unbounded
    if (!item) hi = hi < 0 ? k : std::min(hi, k);
    if (hi >= 0 && lo > hi) return error(path, "minItems cannot be met by the allowed items");
    // tail(j): the elements after the first j (each preceded by a comma).
    std::function<ExprId(int64_t)> tail = [&](int64_t j) -> ExprId {
      if (hi >= 0 && j >= hi) return g_.empty();
      if (j >= k) {
        const auto min = static_cast<int32_t>(std::max<int64_t>(0, lo - j));
        const int32_t max = hi < 0 ? kUnbounded : static_cast<int32_t>(hi - j);
        return g_.repeat(g_.sequence({comma(), *item}), min, max);
      }
      const ExprId next = g_.sequence({comma(), prefix[j], tail(j + 1)});
      return j < lo ? next : g_.optional(next);
    };
    ExprId body = g_.empty();
    if (hi != 0) {
      const ExprId first = g_.sequence({k > 0 ? prefix[0] : *item, tail(1)});
      body = lo > 0 ? first : g_.optional(first);
    }
    return g_.sequence({g_.bytes("["), ws_inner(), body, ws_inner(), g_.bytes("]")});
  }

  // Any key string (no escapes) except the given names.
  ExprId key_except(const std::vector<std::string>& names) {
    const std::vector<CodePointRange> key_chars = normalize_ranges(escaped_chars(), true);
    const auto key_char = [&](int32_t cp) {
      return std::any_of(key_chars.begin(), key_chars.end(), [cp](const CodePointRange& r) {
        return cp >= 0 && r.lo <= static_cast<uint32_t>(cp) && static_cast<uint32_t>(cp) <= r.hi;
      });
    };
    std::vector<std::vector<uint32_t>> decoded;
    for (const std::string& n : names) {
      std::vector<uint32_t> cps;
      size_t pos = 0;
      bool plain = true;
      while (pos < n.size()) {
        const int32_t cp = decode_utf8(n, pos);
        if (!key_char(cp)) {
          plain = false;
          break;
        }
        cps.push_back(static_cast<uint32_t>(cp));
      }
      if (plain) decoded.push_back(std::move(cps));  // others cannot collide with a plain key
    }
    const ExprId tail = g_.star(g_.char_class(key_chars));
    // The names sharing the prefix of length d are decoded[members].
    std::function<ExprId(const std::vector<size_t>&, size_t)> build =
        [&](const std::vector<size_t>& members, size_t d) -> ExprId {
      std::map<uint32_t, std::vector<size_t>> next;
      bool ends_here = false;
      for (size_t m : members) {
        if (decoded[m].size() == d) {
          ends_here = true;
        } else {
          next[decoded[m][d]].push_back(m);
        }
      }
      std::vector<ExprId> alts;
      if (!ends_here) alts.push_back(g_.empty());
      for (const auto& [cp, group] : next) {
        std::string bytes;
        append_utf8(bytes, cp);
        alts.push_back(g_.sequence({g_.bytes(bytes), build(group, d + 1)}));
      }
      // A first character outside the names' next characters: anything may follow.
      std::vector<CodePointRange> excluded;
      for (const auto& [cp, group] : next) excluded.push_back({cp, cp});
      const std::vector<CodePointRange> both =
          intersect_ranges(normalize_ranges(excluded, /*negate=*/true), key_chars);
      if (!both.empty()) alts.push_back(g_.sequence({g_.char_class(both), tail}));
      return g_.choice(std::move(alts));
    };
    std::vector<size_t> all(decoded.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    return build(all, 0);
  }

  Result<ExprId> compile_object(const Json& s, const std::string& path, int depth) {
    struct Prop {
      std::string name;
      ExprId kv;
      bool required;
    };
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return error(path, "required must be an array");
      for (const Json& r : s["required"]) {
        if (!r.is_string()) return error(path, "required must list strings");
        required.insert(r.get<std::string>());
      }
    }
    // Additional properties: none, or a value expression.
    std::optional<ExprId> extra_value;
    if (s.contains("additionalProperties")) {
      const Json& a = s["additionalProperties"];
      if (!(a.is_boolean() && !a.get<bool>())) {
        SGL_ASSIGN_OR_RETURN(ExprId e, compile(a, path + "/additionalProperties", depth + 1));
        extra_value = e;
      }
    } else if (!options_.strict) {
      extra_value = any_value();
    }
    std::vector<Prop> props;
    std::vector<std::string> names;
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) return error(path, "properties must be an object");
      for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) {
        // The name trie of key_except recurses once per character.
        if (it.key().size() > 1024) {
          return error(path, "property names longer than 1024 bytes are not supported");
        }
        SGL_ASSIGN_OR_RETURN(ExprId v,
                             compile(it.value(), path + "/properties/" + it.key(), depth + 1));
        props.push_back({it.key(), g_.sequence({literal(Json(it.key())), colon(), v}),
                         required.count(it.key()) > 0});
        names.push_back(it.key());
      }
    }
    for (const std::string& r : required) {
      if (std::find(names.begin(), names.end(), r) != names.end()) continue;
      if (r.size() > 1024) {
        return error(path, "property names longer than 1024 bytes are not supported");
      }
      if (!extra_value) {
        return error(path, "required property '" + r +
                               "' is not allowed by properties / "
                               "additionalProperties");
      }
      // Required but undeclared: any value that additionalProperties allows.
      props.push_back({r, g_.sequence({literal(Json(r)), colon(), *extra_value}), true});
      names.push_back(r);
    }
    std::optional<ExprId> extra_kv;
    if (extra_value) {
      const RuleId r = g_.add_rule(g_.fresh_name("extra_property"));
      g_.set_body(r, g_.sequence({g_.bytes("\""), key_except(names), g_.bytes("\""), colon(),
                                  *extra_value}));
      extra_kv = g_.ref(r);
    }
    // after[i]: at least one property written, candidates i.. remain; start[i]: none written.
    const size_t n = props.size();
    std::vector<RuleId> after(n + 1), start(n + 1);
    for (size_t i = 0; i <= n; ++i) {
      after[i] = g_.add_rule(g_.fresh_name("obj_after"));
      start[i] = g_.add_rule(g_.fresh_name("obj_start"));
    }
    g_.set_body(after[n], extra_kv ? g_.star(g_.sequence({comma(), *extra_kv})) : g_.empty());
    g_.set_body(start[n],
                extra_kv ? g_.optional(g_.sequence({*extra_kv, g_.ref(after[n])})) : g_.empty());
    for (size_t i = n; i-- > 0;) {
      const ExprId with = g_.sequence({comma(), props[i].kv, g_.ref(after[i + 1])});
      g_.set_body(after[i], props[i].required ? with : g_.choice({with, g_.ref(after[i + 1])}));
      const ExprId first = g_.sequence({props[i].kv, g_.ref(after[i + 1])});
      g_.set_body(start[i], props[i].required ? first : g_.choice({first, g_.ref(start[i + 1])}));
    }
    return g_.sequence({g_.bytes("{"), ws_inner(), g_.ref(start[0]), ws_inner(), g_.bytes("}")});
  }

  const Json& root_;
  JsonSchemaOptions options_;
  Grammar g_;
  std::map<std::string, RuleId> ref_rules_;
  std::map<std::string, RuleId> merged_rules_;  // compile_merging's, by schema text
  int64_t schemas_compiled_ = 0;
};

}  // namespace

Result<JsonWhitespacePattern> JsonWhitespacePattern::parse(std::string regex) {
  Grammar scratch;
  if (auto e = compile_regex(scratch, regex); !e.ok()) {
    return invalid_argument("JSON whitespace pattern: " + e.status().message());
  }
  return JsonWhitespacePattern(std::move(regex));
}

Result<Grammar> json_schema_to_grammar(std::string_view schema_json,
                                       const JsonSchemaOptions& options) {
  if (schema_json.size() > kMaxGrammarTextBytes) {
    return invalid_argument("json schema: larger than " + std::to_string(kMaxGrammarTextBytes) +
                            " bytes");
  }
  // Deep enough for kMaxSchemaDepth schemas (each a few JSON levels), which the compiler checks.
  auto schema = parse_ordered_json(schema_json, 4 * kMaxSchemaDepth + 8);
  if (!schema.ok()) {
    return invalid_argument("json schema: not valid JSON (" + schema.status().message() + ")");
  }
  return SchemaCompiler(*schema, options).compile_document();
}

Grammar any_json_object_grammar(const JsonSchemaOptions& options) {
  const Json empty = Json::object();
  return SchemaCompiler(empty, options).any_object_document();
}

}  // namespace sgl::grammar
