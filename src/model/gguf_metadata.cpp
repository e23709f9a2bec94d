// GGUF metadata values: packed arrays, scalar conversions and the typed getters.
#include "model/gguf_metadata.h"

#include <cstring>
#include <limits>
#include <utility>

#include "core/check.h"

namespace sgl::model {

std::string gguf_value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
      return "uint8";
    case GgufValueType::kInt8:
      return "int8";
    case GgufValueType::kUint16:
      return "uint16";
    case GgufValueType::kInt16:
      return "int16";
    case GgufValueType::kUint32:
      return "uint32";
    case GgufValueType::kInt32:
      return "int32";
    case GgufValueType::kFloat32:
      return "float32";
    case GgufValueType::kBool:
      return "bool";
    case GgufValueType::kString:
      return "string";
    case GgufValueType::kArray:
      return "array";
    case GgufValueType::kUint64:
      return "uint64";
    case GgufValueType::kInt64:
      return "int64";
    case GgufValueType::kFloat64:
      return "float64";
  }
  return "type " + std::to_string(static_cast<uint32_t>(type));
}

size_t gguf_scalar_width(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
      return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32:
      return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
      return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray:
      return 0;
  }
  return 0;
}

// ---- GgufArray ----

GgufArray GgufArray::scalars(GgufValueType type, uint64_t count, std::vector<uint8_t> bytes) {
  const size_t width = gguf_scalar_width(type);
  SGL_CHECK(width > 0 && bytes.size() == count * width)
      << gguf_value_type_name(type) << " array of " << count << " items in " << bytes.size()
      << " bytes";
  GgufArray out;
  out.element_type_ = type;
  out.count_ = count;
  out.bytes_ = std::move(bytes);
  return out;
}

GgufArray GgufArray::strings(std::string chars, std::vector<uint64_t> ends) {
  SGL_CHECK(ends.empty() || ends.back() == chars.size()) << "string array ends mismatch";
  GgufArray out;
  out.element_type_ = GgufValueType::kString;
  out.count_ = ends.size();
  out.chars_ = std::move(chars);
  out.ends_ = std::move(ends);
  return out;
}

GgufArray GgufArray::arrays(std::vector<GgufArray> children) {
  GgufArray out;
  out.element_type_ = GgufValueType::kArray;
  out.count_ = children.size();
  out.children_ = std::move(children);
  return out;
}

std::optional<GgufValue> GgufArray::scalar_at(size_t i) const {
  SGL_CHECK_LT(i, size());
  const size_t width = gguf_scalar_width(element_type_);
  if (width == 0) return std::nullopt;
  const uint8_t* p = bytes_.data() + i * width;
  // NOTE: the bytes are little-endian as on disk; like the reader, assumes a little-endian host.
  auto read = [p]<typename T>(T v) {
    std::memcpy(&v, p, sizeof(T));
    return GgufValue(GgufValue::Storage(v));
  };
  switch (element_type_) {
    case GgufValueType::kUint8:
      return read(uint8_t{});
    case GgufValueType::kInt8:
      return read(int8_t{});
    case GgufValueType::kUint16:
      return read(uint16_t{});
    case GgufValueType::kInt16:
      return read(int16_t{});
    case GgufValueType::kUint32:
      return read(uint32_t{});
    case GgufValueType::kInt32:
      return read(int32_t{});
    case GgufValueType::kFloat32:
      return read(float{});
    case GgufValueType::kBool:
      return GgufValue(GgufValue::Storage(*p != 0));
    case GgufValueType::kUint64:
      return read(uint64_t{});
    case GgufValueType::kInt64:
      return read(int64_t{});
    case GgufValueType::kFloat64:
      return read(double{});
    case GgufValueType::kString:
    case GgufValueType::kArray:
      break;
  }
  return std::nullopt;
}

std::optional<int64_t> GgufArray::int_at(size_t i) const {
  std::optional<GgufValue> v = scalar_at(i);
  return v ? v->as_int() : std::nullopt;
}

std::optional<double> GgufArray::float_at(size_t i) const {
  std::optional<GgufValue> v = scalar_at(i);
  return v ? v->as_float() : std::nullopt;
}

std::optional<bool> GgufArray::bool_at(size_t i) const {
  std::optional<GgufValue> v = scalar_at(i);
  return v ? v->as_bool() : std::nullopt;
}

std::string_view GgufArray::string_at(size_t i) const {
  SGL_CHECK(element_type_ == GgufValueType::kString && i < size())
      << "string_at(" << i << ") of an " << type_description() << " of " << size();
  const uint64_t begin = i == 0 ? 0 : ends_[i - 1];
  return std::string_view(chars_).substr(begin, ends_[i] - begin);
}

const GgufArray& GgufArray::array_at(size_t i) const {
  SGL_CHECK(element_type_ == GgufValueType::kArray && i < size())
      << "array_at(" << i << ") of an " << type_description() << " of " << size();
  return children_[i];
}

size_t GgufArray::memory_bytes() const {
  // The buffers are built at their exact sizes, so sizes are what they hold.
  size_t n = bytes_.size() + chars_.size() + ends_.size() * sizeof(uint64_t) +
             children_.size() * sizeof(GgufArray);
  for (const GgufArray& child : children_) n += child.memory_bytes();
  return n;
}

std::string GgufArray::type_description() const {
  if (element_type_ == GgufValueType::kArray && !children_.empty()) {
    return "array[" + children_.front().type_description() + "]";
  }
  return "array[" + gguf_value_type_name(element_type_) + "]";
}

// ---- GgufValue ----

bool GgufValue::is_integer() const {
  switch (type()) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
      return true;
    default:
      return false;
  }
}

bool GgufValue::is_float() const {
  return type() == GgufValueType::kFloat32 || type() == GgufValueType::kFloat64;
}

std::optional<int64_t> GgufValue::as_int() const {
  return std::visit(
      [](const auto& v) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, uint64_t>) {
          if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
          return static_cast<int64_t>(v);
        } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          return static_cast<int64_t>(v);
        } else {
          return std::nullopt;
        }
      },
      storage_);
}

std::optional<double> GgufValue::as_float() const {
  if (const float* f = std::get_if<float>(&storage_)) return static_cast<double>(*f);
  if (const double* d = std::get_if<double>(&storage_)) return *d;
  if (const uint64_t* u = std::get_if<uint64_t>(&storage_)) return static_cast<double>(*u);
  std::optional<int64_t> i = as_int();
  if (i) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
  if (const bool* b = std::get_if<bool>(&storage_)) return *b;
  return std::nullopt;
}

size_t GgufValue::memory_bytes() const {
  if (const std::string* s = as_string()) return s->size();
  if (const GgufArray* a = as_array()) return a->memory_bytes();
  return 0;
}

std::string GgufValue::type_description() const {
  const GgufArray* array = as_array();
  return array == nullptr ? gguf_value_type_name(type()) : array->type_description();
}

// ---- GgufMetadata ----

const GgufValue* GgufMetadata::find(std::string_view key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

Result<const GgufValue*> GgufMetadata::require(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) {
    return not_found(source_ + ": metadata key '" + std::string(key) + "' is missing");
  }
  return v;
}

Status GgufMetadata::wrong_type(std::string_view key, const GgufValue& value,
                                const char* expected) const {
  return data_loss(source_ + ": metadata key '" + std::string(key) + "' is " +
                   value.type_description() + ", expected " + expected);
}

Result<std::string> GgufMetadata::get_string(std::string_view key) const {
  SGL_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (!v->is_string()) return wrong_type(key, *v, "a string");
  return *v->as_string();
}

Result<int64_t> GgufMetadata::get_int(std::string_view key) const {
  SGL_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  std::optional<int64_t> i = v->as_int();
  if (!i) return wrong_type(key, *v, "an integer that fits int64");
  return *i;
}

Result<double> GgufMetadata::get_float(std::string_view key) const {
  SGL_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  std::optional<double> f = v->as_float();
  if (!f) return wrong_type(key, *v, "a number");
  return *f;
}

Result<bool> GgufMetadata::get_bool(std::string_view key) const {
  SGL_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  std::optional<bool> b = v->as_bool();
  if (!b) return wrong_type(key, *v, "a bool");
  return *b;
}

Result<const GgufArray*> GgufMetadata::get_array(std::string_view key) const {
  SGL_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (!v->is_array()) return wrong_type(key, *v, "an array");
  return v->as_array();
}

Result<size_t> GgufMetadata::get_array_size(std::string_view key) const {
  SGL_ASSIGN_OR_RETURN(const GgufArray* a, get_array(key));
  return a->size();
}

Result<std::vector<std::string>> GgufMetadata::get_string_array(std::string_view key) const {
  SGL_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  const GgufArray* a = v->as_array();
  if (a == nullptr || a->element_type() != GgufValueType::kString) {
    return wrong_type(key, *v, "array[string]");
  }
  std::vector<std::string> out;
  out.reserve(a->size());
  for (size_t i = 0; i < a->size(); ++i) out.emplace_back(a->string_at(i));
  return out;
}

Result<std::vector<int64_t>> GgufMetadata::get_int_array(std::string_view key) const {
  SGL_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  const GgufArray* a = v->as_array();
  if (a == nullptr) return wrong_type(key, *v, "an array of integers");
  std::vector<int64_t> out;
  out.reserve(a->size());
  for (size_t i = 0; i < a->size(); ++i) {
    std::optional<int64_t> item = a->int_at(i);
    if (!item) return wrong_type(key, *v, "an array of integers that fit int64");
    out.push_back(*item);
  }
  return out;
}

Result<std::vector<double>> GgufMetadata::get_float_array(std::string_view key) const {
  SGL_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  const GgufArray* a = v->as_array();
  if (a == nullptr) return wrong_type(key, *v, "an array of numbers");
  std::vector<double> out;
  out.reserve(a->size());
  for (size_t i = 0; i < a->size(); ++i) {
    std::optional<double> item = a->float_at(i);
    if (!item) return wrong_type(key, *v, "an array of numbers");
    out.push_back(*item);
  }
  return out;
}

Result<std::string> GgufMetadata::get_string_or(std::string_view key, std::string fallback) const {
  if (!has(key)) return fallback;
  return get_string(key);
}

Result<int64_t> GgufMetadata::get_int_or(std::string_view key, int64_t fallback) const {
  if (!has(key)) return fallback;
  return get_int(key);
}

Result<double> GgufMetadata::get_float_or(std::string_view key, double fallback) const {
  if (!has(key)) return fallback;
  return get_float(key);
}

Result<bool> GgufMetadata::get_bool_or(std::string_view key, bool fallback) const {
  if (!has(key)) return fallback;
  return get_bool(key);
}

Status GgufMetadata::insert(std::string key, GgufValue value) {
  const size_t bytes = kEntryOverhead + key.size() + value.memory_bytes();
  auto [it, inserted] = entries_.emplace(std::move(key), std::move(value));
  if (!inserted) return data_loss(source_ + ": duplicate metadata key '" + it->first + "'");
  memory_bytes_ += bytes;
  return Status::ok_status();
}

}  // namespace sgl::model
