// Structured-output request fields -> GrammarInput.
#include "server/structured_output_json.h"

#include <string>

#include "server/request_json.h"
#include "server/structural_tag_json.h"

namespace sgl::server::structured_output_json {
namespace {

using json = nlohmann::ordered_json;
using grammar::GrammarKind;
using request_json::dump;
using request_json::field_error;
using request_json::find;

// A regex that matches exactly `text` (guided_choice's alternatives).
std::string escape_regex(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}/").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

Status set(std::optional<GrammarInput>& out, GrammarInput input) {
  if (out) {
    return field_error(input.field, "cannot be combined with '" + out->field +
                                        "': only one of regex, json_schema, ebnf (or their "
                                        "aliases, or response_format) may constrain a request");
  }
  out = std::move(input);
  return Status::ok_status();
}

// A schema given as JSON text (SGLang's form) or as an object (vLLM's and OpenAI's).
Result<std::string> schema_text(const json& v, const std::string& field) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() || v.is_boolean()) return dump(v);
  return field_error(field, "must be a JSON schema (an object, or its JSON text)");
}

Result<std::string> string_field(const json& v, const std::string& field) {
  if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
    return field_error(field, "must be a non-empty string");
  }
  return v.get<std::string>();
}

}  // namespace

Status read_sampling_fields(const json& o, std::optional<GrammarInput>& out) {
  for (const char* key : {"json_schema", "guided_json"}) {
    if (const json* v = find(o, key)) {
      SGL_ASSIGN_OR_RETURN(std::string text, schema_text(*v, key));
      SGL_RETURN_IF_ERROR(set(out, {GrammarKind::kJsonSchema, std::move(text), key}));
    }
  }
  for (const char* key : {"regex", "guided_regex"}) {
    if (const json* v = find(o, key)) {
      SGL_ASSIGN_OR_RETURN(std::string pattern, string_field(*v, key));
      SGL_RETURN_IF_ERROR(set(out, {GrammarKind::kRegex, std::move(pattern), key}));
    }
  }
  for (const char* key : {"ebnf", "guided_grammar"}) {
    if (const json* v = find(o, key)) {
      SGL_ASSIGN_OR_RETURN(std::string source, string_field(*v, key));
      SGL_RETURN_IF_ERROR(set(out, {GrammarKind::kEbnf, std::move(source), key}));
    }
  }
  if (const json* v = find(o, "structural_tag")) {
    SGL_ASSIGN_OR_RETURN(std::string source, structural_tag_ebnf(*v, "structural_tag"));
    SGL_RETURN_IF_ERROR(set(out, {GrammarKind::kEbnf, std::move(source), "structural_tag"}));
  }
  if (const json* v = find(o, "guided_choice")) {
    if (!v->is_array() || v->empty()) {
      return field_error("guided_choice", "must be a non-empty list of strings");
    }
    std::string pattern;
    for (const json& choice : *v) {
      if (!choice.is_string()) return field_error("guided_choice", "must hold strings");
      if (!pattern.empty()) pattern += "|";
      pattern += "(" + escape_regex(choice.get<std::string>()) + ")";
    }
    SGL_RETURN_IF_ERROR(set(out, {GrammarKind::kRegex, std::move(pattern), "guided_choice"}));
  }
  return Status::ok_status();
}

Status read_response_format(const json& o, std::optional<GrammarInput>& out) {
  const json* format = find(o, "response_format");
  if (!format) return Status::ok_status();
  if (!format->is_object()) return field_error("response_format", "must be an object");
  const json* type = find(*format, "type");
  if (!type || !type->is_string()) return field_error("response_format.type", "must be a string");
  const std::string& kind = type->get_ref<const std::string&>();
  if (kind == "text") return Status::ok_status();
  if (kind == "json_object") {
    return set(out, {GrammarKind::kJsonObject, "", "response_format"});
  }
  if (kind == "json_schema") {
    // SGLang's short form {"type": "json_schema", "schema": {...}} too (set_json_schema).
    if (!find(*format, "json_schema")) {
      if (const json* schema = find(*format, "schema")) {
        SGL_ASSIGN_OR_RETURN(std::string text, schema_text(*schema, "response_format.schema"));
        return set(out, {GrammarKind::kJsonSchema, std::move(text), "response_format"});
      }
    }
    const json* spec = find(*format, "json_schema");
    if (!spec || !spec->is_object()) {
      return field_error("response_format.json_schema", "must be an object with a 'schema'");
    }
    if (const json* strict = find(*spec, "strict"); strict && !strict->is_boolean()) {
      return field_error("response_format.json_schema.strict", "must be a boolean");
    }
    const json* schema = find(*spec, "schema");
    if (!schema) return field_error("response_format.json_schema.schema", "is required");
    SGL_ASSIGN_OR_RETURN(std::string text,
                         schema_text(*schema, "response_format.json_schema.schema"));
    return set(out, {GrammarKind::kJsonSchema, std::move(text), "response_format"});
  }
  if (kind == "structural_tag") {
    SGL_ASSIGN_OR_RETURN(std::string source, structural_tag_ebnf(*format, "response_format"));
    return set(out, {GrammarKind::kEbnf, std::move(source), "response_format"});
  }
  return field_error("response_format.type",
                     "must be 'text', 'json_object', 'json_schema' or "
                     "'structural_tag', got '" +
                         kind + "'");
}

}  // namespace sgl::server::structured_output_json
