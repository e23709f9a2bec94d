// structural_tag_ebnf: the two request forms into grammar::StructuralFormat / StructuralTagSpec.
#include "server/structural_tag_json.h"

#include <initializer_list>

#include "grammar/structural_tag.h"
#include "server/request_json.h"

namespace sgl::server {
namespace {

using grammar::StructuralFormat;
using json = nlohmann::ordered_json;
using request_json::field_error;
using Type = StructuralFormat::Type;

// Formats in one structural tag (each a grammar piece, some a whole JSON Schema).
constexpr int kMaxFormats = 1024;

// Refuses keys of `o` outside `known` (and "type").
Status only_keys(const json& o, std::initializer_list<const char*> known, const std::string& at) {
  for (const auto& [key, unused] : o.items()) {
    if (key == "type") continue;
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) return field_error(at, "has no field '" + key + "'");
  }
  return Status::ok_status();
}

Result<std::string> string_at(const json& o, const char* key, const std::string& at) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return field_error(at + "." + key, "is required");
  if (!it->is_string()) return field_error(at + "." + key, "must be a string");
  return it->get<std::string>();
}

Result<std::vector<std::string>> strings_at(const json& o, const char* key, const std::string& at) {
  std::vector<std::string> out;
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return out;
  if (!it->is_array()) return field_error(at + "." + key, "must be a list of strings");
  for (const json& s : *it) {
    if (!s.is_string()) return field_error(at + "." + key, "must be a list of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

// xgrammar's "excludes" (or "excluded_str"), not both.
Result<std::vector<std::string>> excludes_at(const json& o, const std::string& at) {
  if (o.contains("excludes") && o.contains("excluded_str")) {
    return field_error(at, "takes 'excludes' or 'excluded_str', not both");
  }
  return strings_at(o, o.contains("excludes") ? "excludes" : "excluded_str", at);
}

Result<bool> bool_at(const json& o, const char* key, const std::string& at) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return false;
  if (!it->is_boolean()) return field_error(at + "." + key, "must be a boolean");
  return it->get<bool>();
}

// xgrammar's format tree, every key read or refused; at most kMaxFormats formats.
class FormatReader {
 public:
  Result<StructuralFormat> read(const json& o, const std::string& at, int depth) {
    if (++formats_ > kMaxFormats) {
      return field_error(
          at, "is past the structural tag's limit of " + std::to_string(kMaxFormats) + " formats");
    }
    if (depth > grammar::kMaxStructuralDepth) {
      return field_error(at, "nests deeper than " + std::to_string(grammar::kMaxStructuralDepth));
    }
    if (!o.is_object()) return field_error(at, "must be an object");
    const auto type_it = o.find("type");
    if (type_it == o.end() || !type_it->is_string()) {
      return field_error(at + ".type", "is required");
    }
    const std::string type = type_it->get<std::string>();
    StructuralFormat f;
    if (type == "const_string") {
      SGL_RETURN_IF_ERROR(only_keys(o, {"value"}, at));
      f.type = Type::kConstString;
      SGL_ASSIGN_OR_RETURN(f.value, string_at(o, "value", at));
    } else if (type == "json_schema") {
      SGL_RETURN_IF_ERROR(only_keys(o, {"json_schema", "style"}, at));
      if (const auto style = o.find("style");
          style != o.end() && !style->is_null() && *style != "json") {
        return field_error(at + ".style", "other than 'json' is not supported yet");
      }
      f.type = Type::kJsonSchema;
      const auto schema = o.find("json_schema");
      if (schema != o.end() && !schema->is_null()) {  // absent or null: any JSON (SGLang's)
        if (!schema->is_object() && !schema->is_boolean()) {
          return field_error(at + ".json_schema", "must be a JSON schema object");
        }
        f.value = schema->dump();
      }
    } else if (type == "grammar") {
      SGL_RETURN_IF_ERROR(only_keys(o, {"grammar"}, at));
      f.type = Type::kGrammar;
      SGL_ASSIGN_OR_RETURN(f.value, string_at(o, "grammar", at));
    } else if (type == "regex") {
      SGL_RETURN_IF_ERROR(only_keys(o, {"pattern"}, at));
      f.type = Type::kRegex;
      SGL_ASSIGN_OR_RETURN(f.value, string_at(o, "pattern", at));
    } else if (type == "any_text") {
      SGL_RETURN_IF_ERROR(only_keys(o, {"excludes", "excluded_str"}, at));
      f.type = Type::kAnyText;
      SGL_ASSIGN_OR_RETURN(f.strings, excludes_at(o, at));
    } else if (type == "sequence" || type == "or") {
      SGL_RETURN_IF_ERROR(only_keys(o, {"elements"}, at));
      f.type = type == "sequence" ? Type::kSequence : Type::kOr;
      SGL_ASSIGN_OR_RETURN(f.elements, list(o, "elements", at, depth));
    } else if (type == "tag") {
      return tag(o, at, depth);
    } else if (type == "triggered_tags") {
      SGL_RETURN_IF_ERROR(only_keys(
          o, {"triggers", "tags", "at_least_one", "stop_after_first", "excludes", "excluded_str"},
          at));
      f.type = Type::kTriggeredTags;
      SGL_ASSIGN_OR_RETURN(f.strings, strings_at(o, "triggers", at));
      SGL_ASSIGN_OR_RETURN(f.excludes, excludes_at(o, at));
      SGL_RETURN_IF_ERROR(tag_list(o, at, depth, f));
    } else if (type == "tags_with_separator") {
      SGL_RETURN_IF_ERROR(
          only_keys(o, {"separator", "tags", "at_least_one", "stop_after_first"}, at));
      f.type = Type::kTagsWithSeparator;
      SGL_ASSIGN_OR_RETURN(f.separator, string_at(o, "separator", at));
      SGL_RETURN_IF_ERROR(tag_list(o, at, depth, f));
    } else {
      return unimplemented(at + ".type '" + type +
                           "' is not supported (const_string, json_schema, grammar, regex, "
                           "any_text, sequence, or, tag, triggered_tags, tags_with_separator)");
    }
    return f;
  }

 private:
  Result<std::vector<StructuralFormat>> list(const json& o, const char* key, const std::string& at,
                                             int depth) {
    const auto it = o.find(key);
    if (it == o.end() || !it->is_array()) return field_error(at + "." + key, "must be a list");
    std::vector<StructuralFormat> out;
    for (size_t i = 0; i < it->size(); ++i) {
      SGL_ASSIGN_OR_RETURN(
          StructuralFormat f,
          read((*it)[i], at + "." + key + "[" + std::to_string(i) + "]", depth + 1));
      out.push_back(std::move(f));
    }
    return out;
  }

  // {"type": "tag", "begin", "content", "end"}; end: a string or a list of them (any one).
  Result<StructuralFormat> tag(const json& o, const std::string& at, int depth) {
    SGL_RETURN_IF_ERROR(only_keys(o, {"begin", "content", "end"}, at));
    StructuralFormat f;
    f.type = Type::kTag;
    SGL_ASSIGN_OR_RETURN(f.begin, string_at(o, "begin", at));
    if (const auto end = o.find("end"); end != o.end() && end->is_array()) {
      SGL_ASSIGN_OR_RETURN(f.ends, strings_at(o, "end", at));
      if (f.ends.empty()) return field_error(at + ".end", "must not be an empty list");
    } else {
      SGL_ASSIGN_OR_RETURN(std::string one, string_at(o, "end", at));
      f.ends = {std::move(one)};
    }
    const auto content = o.find("content");
    if (content == o.end()) return field_error(at + ".content", "is required");
    SGL_ASSIGN_OR_RETURN(StructuralFormat inner, read(*content, at + ".content", depth + 1));
    f.elements.push_back(std::move(inner));
    return f;
  }

  // The tags (each a tag, "type" optional) and the two switches of a tag list.
  Status tag_list(const json& o, const std::string& at, int depth, StructuralFormat& f) {
    const auto it = o.find("tags");
    if (it == o.end() || !it->is_array()) return field_error(at + ".tags", "must be a list");
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string where = at + ".tags[" + std::to_string(i) + "]";
      const json& t = (*it)[i];
      if (!t.is_object()) return field_error(where, "must be an object");
      if (const auto type = t.find("type"); type != t.end() && *type != "tag") {
        return field_error(where + ".type", "must be 'tag'");
      }
      if (++formats_ > kMaxFormats) {
        return field_error(where, "is past the structural tag's limit of " +
                                      std::to_string(kMaxFormats) + " formats");
      }
      SGL_ASSIGN_OR_RETURN(StructuralFormat one, tag(t, where, depth + 1));
      f.elements.push_back(std::move(one));
    }
    SGL_ASSIGN_OR_RETURN(f.at_least_one, bool_at(o, "at_least_one", at));
    SGL_ASSIGN_OR_RETURN(f.stop_after_first, bool_at(o, "stop_after_first", at));
    return Status::ok_status();
  }

  int formats_ = 0;
};

// The first form: {"structures": [{"begin", "schema", "end"}], "triggers", "at_least_one"}.
Result<grammar::StructuralTagSpec> read_structures(const json& tag, const std::string& field) {
  grammar::StructuralTagSpec spec;
  SGL_RETURN_IF_ERROR(only_keys(tag, {"structures", "triggers", "at_least_one"}, field));
  SGL_ASSIGN_OR_RETURN(spec.triggers, strings_at(tag, "triggers", field));
  SGL_ASSIGN_OR_RETURN(spec.at_least_one, bool_at(tag, "at_least_one", field));
  const auto structures = tag.find("structures");
  if (structures == tag.end() || structures->is_null()) return spec;  // empty: refused later
  if (!structures->is_array()) return field_error(field + ".structures", "must be a list");
  if (structures->size() > static_cast<size_t>(kMaxFormats)) {
    return field_error(field + ".structures",
                       "may hold at most " + std::to_string(kMaxFormats) + " structures");
  }
  for (size_t i = 0; i < structures->size(); ++i) {
    const std::string where = field + ".structures[" + std::to_string(i) + "]";
    const json& st = (*structures)[i];
    if (!st.is_object()) return field_error(where, "must be an object");
    SGL_RETURN_IF_ERROR(only_keys(st, {"begin", "schema", "end"}, where));
    grammar::StructuralTagSpec::Structure out;
    if (!st.contains("begin") || !st.contains("end")) {
      return field_error(where, "needs 'begin' and 'end'");
    }
    SGL_ASSIGN_OR_RETURN(out.begin, string_at(st, "begin", where));
    SGL_ASSIGN_OR_RETURN(out.end, string_at(st, "end", where));
    if (const auto schema = st.find("schema"); schema != st.end() && !schema->is_null()) {
      if (schema->is_string()) {
        out.schema_json = schema->get<std::string>();
      } else if (schema->is_object() || schema->is_boolean()) {
        out.schema_json = schema->dump();
      } else {
        return field_error(where + ".schema", "must be a JSON schema");
      }
    }
    spec.structures.push_back(std::move(out));
  }
  return spec;
}

}  // namespace

Result<std::string> structural_tag_ebnf(const json& value, const std::string& field) {
  json parsed;
  if (value.is_string()) {  // nesting checked before parsing, as a request body's
    auto object = request_json::parse_object(value.get_ref<const std::string&>());
    if (!object.ok()) return field_error(field, object.status().message());
    parsed = std::move(object).value();
  }
  const json& tag = value.is_string() ? parsed : value;
  if (!tag.is_object()) return field_error(field, "must be an object");
  if (const auto type = tag.find("type"); type != tag.end() && *type != "structural_tag") {
    return field_error(field + ".type", "must be 'structural_tag'");
  }
  // The readers' errors name their fields; the grammar's are the request's field's.
  auto ebnf = [&](const Result<grammar::Grammar>& built) -> Result<std::string> {
    if (built.ok()) return built->to_string();
    if (built.status().code() != StatusCode::kInvalidArgument) return built.status();
    return field_error(field, built.status().message());
  };
  if (tag.contains("format")) {
    SGL_RETURN_IF_ERROR(only_keys(tag, {"format"}, field));
    FormatReader reader;
    SGL_ASSIGN_OR_RETURN(StructuralFormat format, reader.read(tag["format"], field + ".format", 0));
    return ebnf(grammar::structural_tag_grammar(format));
  }
  SGL_ASSIGN_OR_RETURN(grammar::StructuralTagSpec spec, read_structures(tag, field));
  return ebnf(grammar::structural_tag_grammar(spec));
}

}  // namespace sgl::server
