// GGUF metadata values: typed scalars, strings, and arrays stored packed, with typed getters.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"

namespace sgl::model {

// Metadata value types; the numbers are GGUF's on-disk ids.
enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// "uint8", "string", "array", ...; "type <id>" for ids GGUF does not define.
std::string gguf_value_type_name(GgufValueType type);
// Bytes of one scalar of `type` (bool: 1); 0 for strings and arrays.
size_t gguf_scalar_width(GgufValueType type);

class GgufValue;

// An array value, stored packed so that it takes about the bytes it takes in the file (a
// tokenizer's 256k-token vocabulary is one buffer, not 256k objects): scalar elements as their
// little-endian bytes in one buffer, strings concatenated in one buffer with one end offset each,
// nested arrays as child arrays. Immutable once built.
class GgufArray {
 public:
  GgufArray() = default;
  // `count` scalars of `type` whose bytes are `bytes` (count * gguf_scalar_width(type)).
  static GgufArray scalars(GgufValueType type, uint64_t count, std::vector<uint8_t> bytes);
  // Strings: element i is chars [ends[i - 1], ends[i]) of `chars` (ends[-1] = 0).
  static GgufArray strings(std::string chars, std::vector<uint64_t> ends);
  // Nested arrays.
  static GgufArray arrays(std::vector<GgufArray> children);

  GgufValueType element_type() const { return element_type_; }
  size_t size() const { return static_cast<size_t>(count_); }
  bool empty() const { return count_ == 0; }

  // Element i (< size()) converted as GgufValue's as_int / as_float / as_bool convert a scalar;
  // nullopt for strings, arrays and values that do not convert.
  std::optional<int64_t> int_at(size_t i) const;
  std::optional<double> float_at(size_t i) const;
  std::optional<bool> bool_at(size_t i) const;
  // Element i of a string array (element_type() == kString), valid while the array lives.
  std::string_view string_at(size_t i) const;
  // Element i of an array of arrays (element_type() == kArray).
  const GgufArray& array_at(size_t i) const;

  // Bytes of the packed storage (nested arrays included): what the array costs in memory.
  size_t memory_bytes() const;
  // "array[int32]", "array[array[string]]", ...
  std::string type_description() const;

 private:
  // Element i of a scalar array as a GgufValue; nullopt for strings and arrays.
  std::optional<GgufValue> scalar_at(size_t i) const;

  GgufValueType element_type_ = GgufValueType::kUint8;
  uint64_t count_ = 0;
  std::vector<uint8_t> bytes_;       // scalars: count * width bytes
  std::string chars_;                // strings: all of them, concatenated
  std::vector<uint64_t> ends_;       // strings: end of each in chars_
  std::vector<GgufArray> children_;  // arrays
};

// One metadata value: a scalar of any GGUF type, a string, or an array.
class GgufValue {
 public:
  // NOTE: the alternatives are in GGUF's type-id order, so storage().index() is the type id.
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, GgufArray, uint64_t, int64_t, double>;

  GgufValue() = default;
  explicit GgufValue(Storage storage) : storage_(std::move(storage)) {}

  GgufValueType type() const { return static_cast<GgufValueType>(storage_.index()); }
  const Storage& storage() const { return storage_; }

  bool is_integer() const;  // uint8 .. int64 (not bool)
  bool is_float() const;    // float32, float64
  bool is_string() const { return type() == GgufValueType::kString; }
  bool is_array() const { return type() == GgufValueType::kArray; }

  // The value as int64 when it is an integer that fits.
  std::optional<int64_t> as_int() const;
  // The value as double when it is a float or an integer.
  std::optional<double> as_float() const;
  std::optional<bool> as_bool() const;
  const std::string* as_string() const { return std::get_if<std::string>(&storage_); }
  const GgufArray* as_array() const { return std::get_if<GgufArray>(&storage_); }

  // Bytes the value holds beyond itself (a string's characters, an array's packed storage).
  size_t memory_bytes() const;
  // "uint32", "string", "array[int32]", "array[array[string]]", ...
  std::string type_description() const;

 private:
  Storage storage_;
};

// The key -> value metadata of one GGUF file, with typed getters whose errors name the file
// and the key: NotFound for a missing key, DataLoss for a value of the wrong type.
class GgufMetadata {
 public:
  using Map = std::map<std::string, GgufValue, std::less<>>;
  // Bookkeeping bytes counted per entry beyond its key and value (the map node).
  static constexpr size_t kEntryOverhead = sizeof(Map::value_type) + 4 * sizeof(void*);

  explicit GgufMetadata(std::string source = "") : source_(std::move(source)) {}

  const Map& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  // Bytes of every entry (keys, values, node overhead), as insert() counts them.
  size_t memory_bytes() const { return memory_bytes_; }
  // nullptr when absent.
  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  Result<std::string> get_string(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;   // any integer type that fits int64
  Result<double> get_float(std::string_view key) const;  // float32/64 or an integer
  Result<bool> get_bool(std::string_view key) const;
  // The packed array itself (no copy), valid while the metadata lives.
  Result<const GgufArray*> get_array(std::string_view key) const;
  // Copies of an array's elements.
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;
  Result<std::vector<double>> get_float_array(std::string_view key) const;
  // Length of an array value (cheap: no copy).
  Result<size_t> get_array_size(std::string_view key) const;

  // As above, but `fallback` when the key is absent (a present value of the wrong type is still
  // an error).
  Result<std::string> get_string_or(std::string_view key, std::string fallback) const;
  Result<int64_t> get_int_or(std::string_view key, int64_t fallback) const;
  Result<double> get_float_or(std::string_view key, double fallback) const;
  Result<bool> get_bool_or(std::string_view key, bool fallback) const;

  // Adds a key; a duplicate key is a DataLoss error (GGUF keys are unique).
  Status insert(std::string key, GgufValue value);

 private:
  Result<const GgufValue*> require(std::string_view key) const;
  Status wrong_type(std::string_view key, const GgufValue& value, const char* expected) const;

  std::string source_;
  Map entries_;
  size_t memory_bytes_ = 0;
};

}  // namespace sgl::model
