// JsonSchemaDocument helpers: errors, $ref resolution, allOf merging.
#include "grammar/json_schema_document.h"

#include <algorithm>
#include <vector>

#include "grammar/json_schema_compiler.h"

namespace sgl::grammar {
namespace {

// (OpenAPI's discriminator only names the property whose const values tell oneOf's branches
// apart, which the branches themselves hold; example is OpenAPI's examples.)
const std::set<std::string> kDescriptive = {
    "title",    "description",      "examples",        "default",   "$schema",      "$id",
    "$comment", "deprecated",       "readOnly",        "writeOnly", "$defs",        "definitions",
    "strict",   "contentMediaType", "contentEncoding", "example",   "discriminator"};

// The property names `s` declares.
std::set<std::string> declared_properties(const Json& s) {
  std::set<std::string> names;
  if (s.contains("properties") && s["properties"].is_object()) {
    for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) {
      names.insert(it.key());
    }
  }
  return names;
}

// allOf's parts each apply whole: one part's additionalProperties (other than true) judges the
// properties the other part declares, and one part's items (past its prefixItems) the other's
// prefixItems. Merged into one schema, the first would judge only its own part's properties and
// the second apply after the other's prefix. Such pairs are refused rather than loosened.
Status check_mergeable(const Json& a, const Json& b, const std::string& path) {
  for (const auto& [x, y] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    if (x->contains("additionalProperties") && (*x)["additionalProperties"] != true) {
      const std::set<std::string> own = declared_properties(*x);
      for (const std::string& name : declared_properties(*y)) {
        if (!own.count(name)) {
          return schema_error(path,
                              "allOf: one part's additionalProperties would judge the "
                              "other part's property '" +
                                  name + "'; not supported");
        }
      }
    }
    if (x->contains("items") && y->contains("prefixItems") && !x->contains("prefixItems")) {
      return schema_error(path,
                          "allOf: items in one part and prefixItems in another are not "
                          "supported");
    }
  }
  return Status::ok_status();
}

}  // namespace

Status schema_error(const std::string& path, const std::string& reason) {
  return invalid_argument("json schema: at '#" + path + "': " + reason);
}

bool is_descriptive_keyword(const std::string& key) { return kDescriptive.count(key) > 0; }

Result<const Json*> resolve_ref(const Json& root, const std::string& ref, const std::string& path) {
  if (ref.empty() || ref[0] != '#') {
    return schema_error(path, "$ref '" + ref +
                                  "': only references into this document (#...) are "
                                  "supported");
  }
  const Json* node = &root;
  size_t pos = 1;
  if (pos < ref.size() && ref[pos] != '/') {
    return schema_error(path, "$ref '" + ref + "': anchors are not supported; use a JSON pointer");
  }
  while (pos < ref.size()) {
    const size_t next = ref.find('/', pos + 1);
    std::string token =
        ref.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    for (size_t i = 0; (i = token.find('~', i)) != std::string::npos; ++i) {
      if (i + 1 < token.size() && token[i + 1] == '1')
        token.replace(i, 2, "/");
      else if (i + 1 < token.size() && token[i + 1] == '0')
        token.replace(i, 2, "~");
    }
    if (node->is_object() && node->contains(token)) {
      node = &(*node)[token];
    } else if (node->is_array() && !token.empty() &&
               token.find_first_not_of("0123456789") == std::string::npos &&
               std::stoull(token.substr(0, 9)) < node->size()) {
      node = &(*node)[std::stoull(token.substr(0, 9))];
    } else {
      return schema_error(path, "$ref '" + ref + "' does not resolve");
    }
    pos = next == std::string::npos ? ref.size() : next;
  }
  return node;
}

Json without(const Json& s, const std::set<std::string>& keys) {
  Json out = Json::object();
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (!keys.count(it.key())) out[it.key()] = it.value();
  }
  return out;
}

Result<Json> merge_schemas(const Json& root, const Json& a_in, const Json& b_in,
                           const std::string& path, int depth, int64_t& work) {
  if (depth > kMaxSchemaDepth) return schema_error(path, "allOf nested too deeply");
  if (++work > kMaxSchemaWork) {
    return schema_error(path, "schema too large: its allOf and $ref expand past the limit");
  }
  Json a = a_in, b = b_in;
  for (Json* x : {&a, &b}) {
    if (x->is_boolean()) {
      if (!x->get<bool>())
        return schema_error(path, "allOf with the schema 'false' accepts no value");
      *x = Json::object();
    }
    if (!x->is_object()) return schema_error(path, "a schema must be an object or a boolean");
    // Inline (non-recursive) references and nested allOf before merging.
    for (int guard = 0; x->contains("$ref") || x->contains("allOf"); ++guard) {
      if (guard > 32) return schema_error(path, "allOf: $ref chain too long");
      if (x->contains("$ref")) {
        if (!(*x)["$ref"].is_string()) return schema_error(path, "$ref must be a string");
        SGL_ASSIGN_OR_RETURN(const Json* t,
                             resolve_ref(root, (*x)["$ref"].get<std::string>(), path));
        Json rest = without(*x, {"$ref"});
        SGL_ASSIGN_OR_RETURN(*x, merge_schemas(root, rest, *t, path, depth + 1, work));
      } else {
        Json rest = without(*x, {"allOf"});
        for (const Json& part : (*x)["allOf"]) {
          SGL_ASSIGN_OR_RETURN(rest, merge_schemas(root, rest, part, path, depth + 1, work));
        }
        *x = rest;
      }
    }
  }
  SGL_RETURN_IF_ERROR(check_mergeable(a, b, path));
  Json out = a;
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& key = it.key();
    const Json& bv = it.value();
    if (!out.contains(key) || is_descriptive_keyword(key)) {
      if (!out.contains(key)) out[key] = bv;
      continue;
    }
    Json& av = out[key];
    if (av == bv) continue;
    if (key == "properties") {
      if (!av.is_object() || !bv.is_object())
        return schema_error(path, "properties must be objects");
      for (auto p = bv.begin(); p != bv.end(); ++p) {
        if (av.contains(p.key())) {
          SGL_ASSIGN_OR_RETURN(av[p.key()],
                               merge_schemas(root, av[p.key()], p.value(),
                                             path + "/properties/" + p.key(), depth + 1, work));
        } else {
          av[p.key()] = p.value();
        }
      }
    } else if (key == "required") {
      if (!av.is_array() || !bv.is_array()) return schema_error(path, "required must be an array");
      for (const Json& r : bv) {
        if (std::find(av.begin(), av.end(), r) == av.end()) av.push_back(r);
      }
    } else if (key == "type") {
      std::vector<std::string> ta, tb, both;
      for (const Json* t : {static_cast<const Json*>(&av), &bv}) {
        auto& v = t == &av ? ta : tb;
        if (t->is_string()) v.push_back(t->get<std::string>());
        if (t->is_array()) {
          for (const Json& x : *t) {
            if (!x.is_string()) return schema_error(path, "type must name types (strings)");
            v.push_back(x.get<std::string>());
          }
        }
      }
      for (const std::string& x : ta) {
        const bool in_b = std::find(tb.begin(), tb.end(), x) != tb.end();
        const bool int_in_number =
            x == "integer" && std::find(tb.begin(), tb.end(), "number") != tb.end();
        if (in_b || int_in_number)
          both.push_back(x);
        else if (x == "number" && std::find(tb.begin(), tb.end(), "integer") != tb.end()) {
          both.push_back("integer");
        }
      }
      if (both.empty()) return schema_error(path, "allOf: the types do not intersect");
      av = both.size() == 1 ? Json(both[0]) : Json(both);
    } else if (key == "minimum" || key == "minLength" || key == "minItems" ||
               key == "exclusiveMinimum") {
      if (bv.is_number() && av.is_number())
        av = std::max(av.get<double>(), bv.get<double>());
      else
        return schema_error(path, "allOf: cannot merge '" + key + "'");
    } else if (key == "maximum" || key == "maxLength" || key == "maxItems" ||
               key == "exclusiveMaximum") {
      if (bv.is_number() && av.is_number())
        av = std::min(av.get<double>(), bv.get<double>());
      else
        return schema_error(path, "allOf: cannot merge '" + key + "'");
    } else if (key == "enum") {
      if (!av.is_array() || !bv.is_array()) return schema_error(path, "enum must be an array");
      Json both = Json::array();
      for (const Json& x : av) {
        if (std::find(bv.begin(), bv.end(), x) != bv.end()) both.push_back(x);
      }
      if (both.empty()) return schema_error(path, "allOf: the enums do not intersect");
      av = both;
    } else if (key == "items" && av.is_object() && bv.is_object()) {
      SGL_ASSIGN_OR_RETURN(av, merge_schemas(root, av, bv, path + "/items", depth + 1, work));
    } else {
      return schema_error(path, "allOf: cannot merge differing '" + key + "'");
    }
  }
  return out;
}

}  // namespace sgl::grammar
