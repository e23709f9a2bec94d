// JsonReader: parse errors and typed field access with file + field path in every message.
#include "tokenizer/json_reader.h"

#include "core/json_nesting.h"

namespace sgl::tokenizer {
namespace {

const char* type_name(const Json& v) { return v.type_name(); }

}  // namespace

Result<Json> JsonReader::parse(std::string_view text) const {
  if (Status s = check_json_nesting(text); !s.ok()) return data_loss(file_ + ": " + s.message());
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return data_loss(file_ + ": invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const std::exception& e) {
    return data_loss(file_ + ": invalid JSON: " + e.what());
  }
}

Status JsonReader::error(const std::string& path, const std::string& message) const {
  return data_loss(file_ + ": " + (path.empty() ? "(root)" : path) + ": " + message);
}

Status JsonReader::unsupported(const std::string& path, const std::string& message) const {
  return unimplemented(file_ + ": " + (path.empty() ? "(root)" : path) + ": " + message);
}

const Json* JsonReader::find(const Json& obj, std::string_view key) const {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Result<std::string> JsonReader::string_field(const Json& obj, std::string_view key,
                                             const std::string& path,
                                             std::optional<std::string> fallback) const {
  const Json* v = find(obj, key);
  if (v == nullptr) {
    if (fallback) return *std::move(fallback);
    return error(join(path, key), "missing string field");
  }
  if (!v->is_string())
    return error(join(path, key), std::string("expected a string, got ") + type_name(*v));
  return v->get<std::string>();
}

Result<std::optional<std::string>> JsonReader::optional_string_field(
    const Json& obj, std::string_view key, const std::string& path) const {
  const Json* v = find(obj, key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string())
    return error(join(path, key), std::string("expected a string, got ") + type_name(*v));
  return std::optional<std::string>(v->get<std::string>());
}

Result<bool> JsonReader::bool_field(const Json& obj, std::string_view key, const std::string& path,
                                    std::optional<bool> fallback) const {
  const Json* v = find(obj, key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return error(join(path, key), "missing boolean field");
  }
  if (!v->is_boolean())
    return error(join(path, key), std::string("expected a boolean, got ") + type_name(*v));
  return v->get<bool>();
}

Result<int64_t> JsonReader::int_field(const Json& obj, std::string_view key,
                                      const std::string& path,
                                      std::optional<int64_t> fallback) const {
  const Json* v = find(obj, key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return error(join(path, key), "missing integer field");
  }
  if (!v->is_number_integer()) {
    return error(join(path, key), std::string("expected an integer, got ") + type_name(*v));
  }
  return v->get<int64_t>();
}

Status JsonReader::expect_object(const Json& value, const std::string& path) const {
  if (value.is_object()) return Status::ok_status();
  return error(path, std::string("expected an object, got ") + type_name(value));
}

Status JsonReader::expect_array(const Json& value, const std::string& path) const {
  if (value.is_array()) return Status::ok_status();
  return error(path, std::string("expected an array, got ") + type_name(value));
}

std::string JsonReader::join(const std::string& path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return path + "." + std::string(key);
}

std::string JsonReader::index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

}  // namespace sgl::tokenizer
