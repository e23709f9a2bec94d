// GGUF reader: header, typed metadata and tensor infos of a .gguf file (versions 2 and 3), mmap'd.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"
#include "model/ggml_type.h"
#include "model/safetensors.h"

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

class GgufValue;

// An array value: every item has `element_type` (arrays may nest: element_type kArray).
struct GgufArray {
  GgufValueType element_type = GgufValueType::kUint8;
  std::vector<GgufValue> items;
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

  explicit GgufMetadata(std::string source = "") : source_(std::move(source)) {}

  const Map& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  // nullptr when absent.
  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  Result<std::string> get_string(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;   // any integer type that fits int64
  Result<double> get_float(std::string_view key) const;  // float32/64 or an integer
  Result<bool> get_bool(std::string_view key) const;
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
};

// One tensor of a GGUF file.
struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  // Row-major, outermost first: GGUF stores dims innermost first (ne[0] = row length), so this
  // is GGUF's dim list reversed. A GGUF [576, 49152] embedding is shape {49152, 576}.
  std::vector<int64_t> shape;
  uint64_t offset = 0;            // from the start of the data section, as stored
  const uint8_t* data = nullptr;  // into the owning GgufFile's mapping
  size_t nbytes = 0;              // bytes of the (possibly quantized) data

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// A .gguf file (versions 2 and 3, little-endian). open() validates the whole header: magic,
// version, every metadata value, tensor infos (known types, at most 4 dims, rows a whole number
// of blocks, aligned offsets, data inside the file); counts and lengths are checked against the
// bytes left before anything is allocated from them. Move-only; tensor data pointers stay valid
// while the file lives (moves included).
class GgufFile {
 public:
  static constexpr uint64_t kDefaultAlignment = 32;
  static constexpr int kMaxDims = 4;

  static Result<GgufFile> open(const std::filesystem::path& path);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }      // general.alignment, default 32
  uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
  const GgufMetadata& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }  // in file order
  // nullptr when absent.
  const GgufTensorInfo* find_tensor(std::string_view name) const;

 private:
  std::string path_;
  MappedFile mapping_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  GgufMetadata metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// True when `path` is a regular file that starts with the GGUF magic.
bool is_gguf_file(const std::filesystem::path& path);

}  // namespace sgl::model
