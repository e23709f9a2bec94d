// JsonReader: typed, path-tracking field access for the tokenizer's JSON loaders.
// NOTE: internal to src/tokenizer/*.cpp (it exposes nlohmann::json); never include it elsewhere.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace sgl::tokenizer {

using Json = nlohmann::json;

// Every error names the file and the field path, e.g.
// "DataLoss: /m/tokenizer.json: normalizer.normalizers[1].pattern: expected an object".
class JsonReader {
 public:
  explicit JsonReader(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }

  // Parses `text`; a syntax error reports the byte offset.
  Result<Json> parse(std::string_view text) const;

  Status error(const std::string& path, const std::string& message) const;
  Status unsupported(const std::string& path, const std::string& message) const;

  // Field accessors on an object `obj` (at `path`). A missing or null field yields `fallback`
  // when given, else an error; a field of the wrong type is always an error.
  Result<std::string> string_field(const Json& obj, std::string_view key, const std::string& path,
                                   std::optional<std::string> fallback = std::nullopt) const;
  Result<std::optional<std::string>> optional_string_field(const Json& obj, std::string_view key,
                                                           const std::string& path) const;
  Result<bool> bool_field(const Json& obj, std::string_view key, const std::string& path,
                          std::optional<bool> fallback = std::nullopt) const;
  Result<int64_t> int_field(const Json& obj, std::string_view key, const std::string& path,
                            std::optional<int64_t> fallback = std::nullopt) const;
  // The field's value, or nullptr when missing or null.
  const Json* find(const Json& obj, std::string_view key) const;

  Status expect_object(const Json& value, const std::string& path) const;
  Status expect_array(const Json& value, const std::string& path) const;

  static std::string join(const std::string& path, std::string_view key);
  static std::string index(const std::string& path, size_t i);

 private:
  std::string file_;
};

}  // namespace sgl::tokenizer
