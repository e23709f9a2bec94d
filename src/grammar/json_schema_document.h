// A JSON Schema document as the schema compiler reads it: its JSON type, errors naming a
// location, $ref resolution, and allOf's merging of schemas. Internal to grammar/ (the JSON
// library stays inside json_schema_*.cpp and this header's users).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/status.h"

namespace sgl::grammar {

using Json = nlohmann::ordered_json;  // keeps `properties` in schema order

// InvalidArgument "json schema: at '#<path>': <reason>".
Status schema_error(const std::string& path, const std::string& reason);

// Keywords that describe a schema without constraining it (title, description, $defs, ...).
bool is_descriptive_keyword(const std::string& key);

// The node a local reference ("#", "#/$defs/a", JSON-pointer escapes) names inside `root`.
Result<const Json*> resolve_ref(const Json& root, const std::string& ref, const std::string& path);

// `s` without `keys`.
Json without(const Json& s, const std::set<std::string>& keys);

// Schemas a document may compile and merge in all (its `work`): inlining references and allOf
// can grow exponentially with a few kilobytes of schema (each level referencing the next twice).
inline constexpr int64_t kMaxSchemaWork = 100000;

// allOf of `a` and `b` as one schema (references into `root` and nested allOf inlined), or an
// error where the two cannot be merged. Each merge counts against `work` (kMaxSchemaWork).
Result<Json> merge_schemas(const Json& root, const Json& a, const Json& b, const std::string& path,
                           int depth, int64_t& work);

}  // namespace sgl::grammar
