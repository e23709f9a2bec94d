// GGUF parsing: a bounds-checked little-endian cursor over the mapping, metadata, tensor infos.
#include "model/gguf.h"

#include <cstring>
#include <fstream>
#include <limits>
#include <system_error>
#include <utility>

namespace sgl::model {
namespace {

constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr int kMaxArrayDepth = 8;  // nested arrays beyond this are refused (stack safety)
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, 0 dims, type, offset

// Bytes one array item of `type` takes at least (scalars exactly; strings and arrays their
// length / type + count fields), so item counts can be bounded by the bytes left.
uint64_t min_value_bytes(GgufValueType type) {
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
    case GgufValueType::kString:
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
      return 8;
    case GgufValueType::kArray:
      return 4 + 8;
  }
  return 1;
}

bool is_known_value_type(uint32_t id) {
  return id <= static_cast<uint32_t>(GgufValueType::kFloat64);
}

// Little-endian reads from the mapped bytes; every read is bounds-checked and a short read is a
// DataLoss error naming the file, the offset and what was being read.
class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size, const std::string& file)
      : data_(data), size_(size), file_(file) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  Status truncated(uint64_t need, const std::string& what) const {
    return data_loss(file_ + ": truncated: " + what + " needs " + std::to_string(need) +
                     " bytes at offset " + std::to_string(pos_) + " but the file has " +
                     std::to_string(remaining()) + " left");
  }

  Status bytes(void* dst, uint64_t n, const std::string& what) {
    if (n > remaining()) return truncated(n, what);
    if (n > 0) std::memcpy(dst, data_ + pos_, n);
    pos_ += n;
    return Status::ok_status();
  }

  template <typename T>
  Result<T> scalar(const std::string& what) {
    T v{};
    SGL_RETURN_IF_ERROR(bytes(&v, sizeof(T), what));  // NOTE: assumes a little-endian host
    return v;
  }

  Result<std::string> string(const std::string& what) {
    SGL_ASSIGN_OR_RETURN(uint64_t len, scalar<uint64_t>(what + " length"));
    if (len > remaining()) {
      return data_loss(file_ + ": " + what + " has length " + std::to_string(len) + " but only " +
                       std::to_string(remaining()) + " bytes are left at offset " +
                       std::to_string(pos_));
    }
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += len;
    return s;
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& file_;
};

Result<GgufValue> read_value(Cursor& in, GgufValueType type, const std::string& file,
                             const std::string& what, int depth);

Result<GgufValue> read_array(Cursor& in, const std::string& file, const std::string& what,
                             int depth) {
  if (depth >= kMaxArrayDepth) {
    return data_loss(file + ": " + what + ": arrays nested deeper than " +
                     std::to_string(kMaxArrayDepth) + " levels");
  }
  SGL_ASSIGN_OR_RETURN(uint32_t elem_id, in.scalar<uint32_t>(what + " element type"));
  if (!is_known_value_type(elem_id)) {
    return data_loss(file + ": " + what + ": unknown array element type " +
                     std::to_string(elem_id));
  }
  const auto elem = static_cast<GgufValueType>(elem_id);
  SGL_ASSIGN_OR_RETURN(uint64_t count, in.scalar<uint64_t>(what + " element count"));
  // Checked before reserving: a corrupt count must not turn into a huge allocation.
  if (count > in.remaining() / min_value_bytes(elem)) {
    return data_loss(file + ": " + what + ": array of " + std::to_string(count) + " " +
                     gguf_value_type_name(elem) + " items cannot fit in the " +
                     std::to_string(in.remaining()) + " bytes left");
  }
  GgufArray array;
  array.element_type = elem;
  array.items.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    SGL_ASSIGN_OR_RETURN(
        GgufValue item,
        read_value(in, elem, file, what + "[" + std::to_string(i) + "]", depth + 1));
    array.items.push_back(std::move(item));
  }
  return GgufValue(GgufValue::Storage(std::move(array)));
}

Result<GgufValue> read_value(Cursor& in, GgufValueType type, const std::string& file,
                             const std::string& what, int depth) {
  using S = GgufValue::Storage;
  switch (type) {
    case GgufValueType::kUint8: {
      SGL_ASSIGN_OR_RETURN(uint8_t v, in.scalar<uint8_t>(what));
      return GgufValue(S(v));
    }
    case GgufValueType::kInt8: {
      SGL_ASSIGN_OR_RETURN(int8_t v, in.scalar<int8_t>(what));
      return GgufValue(S(v));
    }
    case GgufValueType::kUint16: {
      SGL_ASSIGN_OR_RETURN(uint16_t v, in.scalar<uint16_t>(what));
      return GgufValue(S(v));
    }
    case GgufValueType::kInt16: {
      SGL_ASSIGN_OR_RETURN(int16_t v, in.scalar<int16_t>(what));
      return GgufValue(S(v));
    }
    case GgufValueType::kUint32: {
      SGL_ASSIGN_OR_RETURN(uint32_t v, in.scalar<uint32_t>(what));
      return GgufValue(S(v));
    }
    case GgufValueType::kInt32: {
      SGL_ASSIGN_OR_RETURN(int32_t v, in.scalar<int32_t>(what));
      return GgufValue(S(v));
    }
    case GgufValueType::kFloat32: {
      SGL_ASSIGN_OR_RETURN(float v, in.scalar<float>(what));
      return GgufValue(S(v));
    }
    case GgufValueType::kBool: {
      SGL_ASSIGN_OR_RETURN(uint8_t v, in.scalar<uint8_t>(what));
      return GgufValue(S(v != 0));
    }
    case GgufValueType::kString: {
      SGL_ASSIGN_OR_RETURN(std::string v, in.string(what));
      return GgufValue(S(std::move(v)));
    }
    case GgufValueType::kArray:
      return read_array(in, file, what, depth);
    case GgufValueType::kUint64: {
      SGL_ASSIGN_OR_RETURN(uint64_t v, in.scalar<uint64_t>(what));
      return GgufValue(S(v));
    }
    case GgufValueType::kInt64: {
      SGL_ASSIGN_OR_RETURN(int64_t v, in.scalar<int64_t>(what));
      return GgufValue(S(v));
    }
    case GgufValueType::kFloat64: {
      SGL_ASSIGN_OR_RETURN(double v, in.scalar<double>(what));
      return GgufValue(S(v));
    }
  }
  return data_loss(file + ": " + what + ": unknown value type");
}

std::string dims_str(const std::vector<uint64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

// Reads one tensor info (name, dims, type, offset) and checks everything but the data range.
Status read_tensor_info(Cursor& in, const std::string& file, uint64_t index, GgufTensorInfo& info) {
  const std::string where = "tensor #" + std::to_string(index);
  SGL_ASSIGN_OR_RETURN(info.name, in.string(where + " name"));
  const std::string named = "tensor '" + info.name + "'";
  SGL_ASSIGN_OR_RETURN(uint32_t n_dims, in.scalar<uint32_t>(named + " dim count"));
  if (n_dims > static_cast<uint32_t>(GgufFile::kMaxDims)) {
    return data_loss(file + ": " + named + " has " + std::to_string(n_dims) + " dims (at most " +
                     std::to_string(GgufFile::kMaxDims) + ")");
  }
  std::vector<uint64_t> dims(n_dims);
  for (uint32_t d = 0; d < n_dims; ++d) {
    SGL_ASSIGN_OR_RETURN(dims[d], in.scalar<uint64_t>(named + " dim " + std::to_string(d)));
  }
  SGL_ASSIGN_OR_RETURN(uint32_t type_id, in.scalar<uint32_t>(named + " type"));
  SGL_ASSIGN_OR_RETURN(info.offset, in.scalar<uint64_t>(named + " offset"));

  std::optional<GgmlTypeTraits> traits = ggml_type_traits(type_id);
  if (!traits) {
    return unimplemented(file + ": " + named + " has unknown ggml type id " +
                         std::to_string(type_id));
  }
  info.type = static_cast<GgmlType>(type_id);

  uint64_t numel = 1;
  bool overflow = false;
  for (uint64_t d : dims) {
    overflow = overflow || d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
               __builtin_mul_overflow(numel, d, &numel);
  }
  if (overflow || numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return data_loss(file + ": " + named + " dims " + dims_str(dims) + " overflow 64 bits");
  }
  const uint64_t row = n_dims == 0 ? 1 : dims[0];
  const auto block = static_cast<uint64_t>(traits->block_size);
  if (row % block != 0) {
    return data_loss(file + ": " + named + " of type " + std::string(traits->name) +
                     " has rows of " + std::to_string(row) +
                     " elements, not a multiple of its block size " + std::to_string(block));
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel / block, static_cast<uint64_t>(traits->type_size), &nbytes) ||
      nbytes > std::numeric_limits<size_t>::max()) {
    return data_loss(file + ": " + named + " dims " + dims_str(dims) + " overflow 64 bits");
  }
  info.nbytes = static_cast<size_t>(nbytes);
  info.shape.assign(dims.rbegin(), dims.rend());  // innermost-first -> row-major
  return Status::ok_status();
}

}  // namespace

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

std::string GgufValue::type_description() const {
  const GgufArray* array = as_array();
  if (array == nullptr) return gguf_value_type_name(type());
  if (array->element_type == GgufValueType::kArray && !array->items.empty()) {
    return "array[" + array->items.front().type_description() + "]";
  }
  return "array[" + gguf_value_type_name(array->element_type) + "]";
}

// ---- GgufMetadata ----

const GgufValue* GgufMetadata::find(std::string_view key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

Result<const GgufValue*> GgufMetadata::require(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr)
    return not_found(source_ + ": metadata key '" + std::string(key) + "' is missing");
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

Result<size_t> GgufMetadata::get_array_size(std::string_view key) const {
  SGL_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (!v->is_array()) return wrong_type(key, *v, "an array");
  return v->as_array()->items.size();
}

Result<std::vector<std::string>> GgufMetadata::get_string_array(std::string_view key) const {
  SGL_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  const GgufArray* a = v->as_array();
  if (a == nullptr || a->element_type != GgufValueType::kString) {
    return wrong_type(key, *v, "array[string]");
  }
  std::vector<std::string> out;
  out.reserve(a->items.size());
  for (const GgufValue& item : a->items) out.push_back(*item.as_string());
  return out;
}

Result<std::vector<int64_t>> GgufMetadata::get_int_array(std::string_view key) const {
  SGL_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  const GgufArray* a = v->as_array();
  if (a == nullptr) return wrong_type(key, *v, "an array of integers");
  std::vector<int64_t> out;
  out.reserve(a->items.size());
  for (const GgufValue& item : a->items) {
    std::optional<int64_t> i = item.as_int();
    if (!i) return wrong_type(key, *v, "an array of integers that fit int64");
    out.push_back(*i);
  }
  return out;
}

Result<std::vector<double>> GgufMetadata::get_float_array(std::string_view key) const {
  SGL_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  const GgufArray* a = v->as_array();
  if (a == nullptr) return wrong_type(key, *v, "an array of numbers");
  std::vector<double> out;
  out.reserve(a->items.size());
  for (const GgufValue& item : a->items) {
    std::optional<double> f = item.as_float();
    if (!f) return wrong_type(key, *v, "an array of numbers");
    out.push_back(*f);
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
  auto [it, inserted] = entries_.emplace(std::move(key), std::move(value));
  if (!inserted) return data_loss(source_ + ": duplicate metadata key '" + it->first + "'");
  return Status::ok_status();
}

// ---- GgufFile ----

Result<GgufFile> GgufFile::open(const std::filesystem::path& path) {
  GgufFile out;
  out.path_ = path.string();
  const std::string& file = out.path_;
  SGL_ASSIGN_OR_RETURN(out.mapping_, MappedFile::open(path));
  Cursor in(out.mapping_.data(), out.mapping_.size(), file);

  char magic[4] = {};
  if (in.remaining() < 4) {
    return data_loss(file + ": not a GGUF file: " + std::to_string(in.remaining()) +
                     " bytes, too short for the magic");
  }
  SGL_RETURN_IF_ERROR(in.bytes(magic, 4, "magic"));
  if (std::memcmp(magic, kMagic, 4) != 0) {
    std::string shown;
    for (char c : magic) {
      const auto b = static_cast<uint8_t>(c);
      if (b >= 0x20 && b < 0x7f) {
        shown += c;
      } else {
        constexpr char kHex[] = "0123456789abcdef";
        shown += std::string("\\x") + kHex[b >> 4] + kHex[b & 15];
      }
    }
    return data_loss(file + ": not a GGUF file: bad magic '" + shown + "' (expected 'GGUF')");
  }
  SGL_ASSIGN_OR_RETURN(out.version_, in.scalar<uint32_t>("version"));
  if (out.version_ != 2 && out.version_ != 3) {
    // A big-endian file reads as a byte-swapped small version (e.g. 0x03000000).
    if ((out.version_ & 0xffffu) == 0 && (out.version_ >> 24) >= 1 && (out.version_ >> 24) <= 3) {
      return unimplemented(file + ": big-endian GGUF files are not supported");
    }
    return unimplemented(file + ": GGUF version " + std::to_string(out.version_) +
                         " is not supported (supported: 2, 3)");
  }
  SGL_ASSIGN_OR_RETURN(uint64_t n_tensors, in.scalar<uint64_t>("tensor count"));
  SGL_ASSIGN_OR_RETURN(uint64_t n_kv, in.scalar<uint64_t>("metadata count"));
  // Each key-value pair takes at least 8 (key length) + 4 (type) + 1 bytes.
  if (n_kv > in.remaining() / 13) {
    return data_loss(file + ": metadata count " + std::to_string(n_kv) + " cannot fit in the " +
                     std::to_string(in.remaining()) + " bytes left");
  }

  out.metadata_ = GgufMetadata(file);
  for (uint64_t i = 0; i < n_kv; ++i) {
    SGL_ASSIGN_OR_RETURN(std::string key, in.string("metadata key #" + std::to_string(i)));
    const std::string what = "metadata key '" + key + "'";
    SGL_ASSIGN_OR_RETURN(uint32_t type_id, in.scalar<uint32_t>(what + " type"));
    if (!is_known_value_type(type_id)) {
      return data_loss(file + ": " + what + " has unknown value type " + std::to_string(type_id));
    }
    SGL_ASSIGN_OR_RETURN(GgufValue value,
                         read_value(in, static_cast<GgufValueType>(type_id), file, what, 0));
    SGL_RETURN_IF_ERROR(out.metadata_.insert(std::move(key), std::move(value)));
  }

  if (const GgufValue* a = out.metadata_.find("general.alignment")) {
    const uint32_t* align = std::get_if<uint32_t>(&a->storage());
    if (align == nullptr) {
      return data_loss(file + ": metadata key 'general.alignment' is " + a->type_description() +
                       ", expected uint32");
    }
    if (*align == 0 || (*align & (*align - 1)) != 0) {
      return data_loss(file + ": general.alignment " + std::to_string(*align) +
                       " is not a power of two");
    }
    out.alignment_ = *align;
  }

  if (n_tensors > in.remaining() / kMinTensorInfoBytes) {
    return data_loss(file + ": tensor count " + std::to_string(n_tensors) + " cannot fit in the " +
                     std::to_string(in.remaining()) + " bytes left");
  }
  out.tensors_.resize(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo& info = out.tensors_[i];
    SGL_RETURN_IF_ERROR(read_tensor_info(in, file, i, info));
    auto [it, inserted] = out.tensor_index_.emplace(info.name, static_cast<size_t>(i));
    if (!inserted) return data_loss(file + ": duplicate tensor name '" + info.name + "'");
  }

  // The data section starts at the next multiple of the alignment.
  const uint64_t header_end = in.pos();
  const uint64_t size = out.mapping_.size();
  out.data_offset_ = header_end + (out.alignment_ - header_end % out.alignment_) % out.alignment_;
  if (n_tensors > 0 && out.data_offset_ > size) {
    return data_loss(file + ": truncated: the data section should start at offset " +
                     std::to_string(out.data_offset_) + " but the file has " +
                     std::to_string(size) + " bytes");
  }
  const uint64_t data_size = n_tensors > 0 ? size - out.data_offset_ : 0;
  for (GgufTensorInfo& info : out.tensors_) {
    const std::string named = file + ": tensor '" + info.name + "'";
    if (info.offset % out.alignment_ != 0) {
      return data_loss(named + " offset " + std::to_string(info.offset) +
                       " is not a multiple of the alignment " + std::to_string(out.alignment_));
    }
    if (info.offset > data_size || info.nbytes > data_size - info.offset) {
      return data_loss(named + " (" + std::to_string(info.nbytes) + " bytes at data offset " +
                       std::to_string(info.offset) +
                       ") runs past the end of the file (data section " +
                       std::to_string(data_size) + " bytes)");
    }
    info.data = out.mapping_.data() + out.data_offset_ + info.offset;
  }
  return out;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

bool is_gguf_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  if (!in.read(magic, 4)) return false;
  return std::memcmp(magic, kMagic, 4) == 0;
}

}  // namespace sgl::model
