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
    case GgufValueType::kString:
      return 8;
    case GgufValueType::kArray:
      return 4 + 8;
    default:
      return gguf_scalar_width(type);
  }
}

bool is_known_value_type(uint32_t id) {
  return id <= static_cast<uint32_t>(GgufValueType::kFloat64);
}

std::string bytes_text(uint64_t n) {
  if (n >= (uint64_t{1} << 20) && n % (uint64_t{1} << 20) == 0) {
    return std::to_string(n >> 20) + " MiB";
  }
  return std::to_string(n) + " bytes";
}

// Little-endian reads from the file's bytes; every read is bounds-checked and a short read is a
// DataLoss error naming the file, the offset and what was being read.
class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size, const std::string& file)
      : data_(data), size_(size), file_(file) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  const uint8_t* here() const { return data_ + pos_; }

  Status truncated(uint64_t need, const std::string& what) const {
    return data_loss("truncated GGUF file " + file_ + ": " + what + " needs " +
                     std::to_string(need) + " bytes at offset " + std::to_string(pos_) +
                     ", the file has " + std::to_string(size_));
  }

  Status bytes(void* dst, uint64_t n, const std::string& what) {
    if (n > remaining()) return truncated(n, what);
    if (n > 0) std::memcpy(dst, data_ + pos_, n);
    pos_ += n;
    return Status::ok_status();
  }

  Status skip(uint64_t n, const std::string& what) {
    if (n > remaining()) return truncated(n, what);
    pos_ += n;
    return Status::ok_status();
  }

  template <typename T>
  Result<T> scalar(const std::string& what) {
    T v{};
    SGL_RETURN_IF_ERROR(bytes(&v, sizeof(T), what));  // NOTE: assumes a little-endian host
    return v;
  }

  // A string's length, checked against the bytes left (the characters are not consumed).
  Result<uint64_t> string_length(const std::string& what) {
    SGL_ASSIGN_OR_RETURN(uint64_t len, scalar<uint64_t>(what + " length"));
    if (len > remaining()) {
      return data_loss("truncated GGUF file " + file_ + ": " + what + " has length " +
                       std::to_string(len) + " but only " + std::to_string(remaining()) +
                       " bytes are left at offset " + std::to_string(pos_) + ", the file has " +
                       std::to_string(size_));
    }
    return len;
  }

  Result<std::string> string(const std::string& what) {
    SGL_ASSIGN_OR_RETURN(uint64_t len, string_length(what));
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

// Counts the memory the parsed header will take and refuses, before allocating, past the limit.
class HeaderBudget {
 public:
  HeaderBudget(uint64_t limit, const std::string& file) : limit_(limit), file_(file) {}

  Status charge(uint64_t bytes, const std::string& what) {
    if (bytes > limit_ - used_) {
      return resource_exhausted(file_ + ": the GGUF header (metadata and tensor infos) needs " +
                                "more than the " + bytes_text(limit_) + " limit, at " + what);
    }
    used_ += bytes;
    return Status::ok_status();
  }

 private:
  uint64_t limit_;
  uint64_t used_ = 0;
  const std::string& file_;
};

// The reading state of one file: cursor, budget and the file name for messages.
struct Reader {
  Cursor in;
  HeaderBudget budget;
  const std::string& file;
};

Result<GgufArray> read_array(Reader& r, const std::string& what, int depth);

Result<GgufArray> read_string_array(Reader& r, uint64_t count, const std::string& what) {
  // Two passes: the lengths first (bounds-checked, not stored), so that the characters and the
  // offsets are charged and allocated once, at their exact size.
  Cursor probe = r.in;
  uint64_t total = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const std::string item = what + "[" + std::to_string(i) + "]";
    SGL_ASSIGN_OR_RETURN(uint64_t len, probe.string_length(item));
    SGL_RETURN_IF_ERROR(probe.skip(len, item));
    total += len;  // <= the file size: no overflow
  }
  SGL_RETURN_IF_ERROR(r.budget.charge(total + count * sizeof(uint64_t), what));
  std::string chars(static_cast<size_t>(total), '\0');
  std::vector<uint64_t> ends(static_cast<size_t>(count));
  uint64_t end = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const std::string item = what + "[" + std::to_string(i) + "]";
    SGL_ASSIGN_OR_RETURN(uint64_t len, r.in.string_length(item));
    SGL_RETURN_IF_ERROR(r.in.bytes(chars.data() + end, len, item));
    end += len;
    ends[i] = end;
  }
  return GgufArray::strings(std::move(chars), std::move(ends));
}

Result<GgufArray> read_array(Reader& r, const std::string& what, int depth) {
  if (depth >= kMaxArrayDepth) {
    return data_loss(r.file + ": " + what + ": arrays nested deeper than " +
                     std::to_string(kMaxArrayDepth) + " levels");
  }
  SGL_ASSIGN_OR_RETURN(uint32_t elem_id, r.in.scalar<uint32_t>(what + " element type"));
  if (!is_known_value_type(elem_id)) {
    return data_loss(r.file + ": " + what + ": unknown array element type " +
                     std::to_string(elem_id));
  }
  const auto elem = static_cast<GgufValueType>(elem_id);
  SGL_ASSIGN_OR_RETURN(uint64_t count, r.in.scalar<uint64_t>(what + " element count"));
  // Checked before anything is sized from it: a corrupt count must not become an allocation.
  if (count > r.in.remaining() / min_value_bytes(elem)) {
    return data_loss("truncated GGUF file " + r.file + ": " + what + ": array of " +
                     std::to_string(count) + " " + gguf_value_type_name(elem) +
                     " items cannot fit in the " + std::to_string(r.in.remaining()) +
                     " bytes left");
  }
  if (elem == GgufValueType::kString) return read_string_array(r, count, what);
  if (elem == GgufValueType::kArray) {
    SGL_RETURN_IF_ERROR(r.budget.charge(count * sizeof(GgufArray), what));
    std::vector<GgufArray> children;
    children.reserve(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i) {
      SGL_ASSIGN_OR_RETURN(GgufArray child,
                           read_array(r, what + "[" + std::to_string(i) + "]", depth + 1));
      children.push_back(std::move(child));
    }
    return GgufArray::arrays(std::move(children));
  }
  const uint64_t nbytes = count * gguf_scalar_width(elem);  // <= remaining(): no overflow
  SGL_RETURN_IF_ERROR(r.budget.charge(nbytes, what));
  std::vector<uint8_t> bytes(static_cast<size_t>(nbytes));
  SGL_RETURN_IF_ERROR(r.in.bytes(bytes.data(), nbytes, what));
  return GgufArray::scalars(elem, count, std::move(bytes));
}

Result<GgufValue> read_value(Reader& r, GgufValueType type, const std::string& what) {
  using S = GgufValue::Storage;
  Cursor& in = r.in;
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
      Cursor probe = in;
      SGL_ASSIGN_OR_RETURN(uint64_t len, probe.string_length(what));
      SGL_RETURN_IF_ERROR(r.budget.charge(len, what));
      SGL_ASSIGN_OR_RETURN(std::string v, in.string(what));
      return GgufValue(S(std::move(v)));
    }
    case GgufValueType::kArray: {
      SGL_ASSIGN_OR_RETURN(GgufArray v, read_array(r, what, 0));
      return GgufValue(S(std::move(v)));
    }
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
  return data_loss(r.file + ": " + what + ": unknown value type");
}

std::string dims_str(const std::vector<uint64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

// Reads one tensor info (name, dims, type, offset) and checks everything but the data range.
Status read_tensor_info(Reader& r, uint64_t index, GgufTensorInfo& info) {
  Cursor& in = r.in;
  const std::string& file = r.file;
  const std::string where = "tensor #" + std::to_string(index);
  Cursor probe = in;
  SGL_ASSIGN_OR_RETURN(uint64_t name_len, probe.string_length(where + " name"));
  SGL_RETURN_IF_ERROR(r.budget.charge(name_len + GgufFile::kMaxDims * sizeof(int64_t), where));
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

// ---- GgufFile ----

Result<GgufFile> GgufFile::open(const std::filesystem::path& path, const GgufReadOptions& options) {
  GgufFile out;
  out.path_ = path.string();
  SGL_ASSIGN_OR_RETURN(out.mapping_, MappedFile::open(path));
  out.bytes_ = out.mapping_.data();
  out.size_ = out.mapping_.size();
  SGL_RETURN_IF_ERROR(out.parse(options));
  return out;
}

Result<GgufFile> GgufFile::from_bytes(std::span<const uint8_t> bytes, std::string name,
                                      const GgufReadOptions& options) {
  GgufFile out;
  out.path_ = std::move(name);
  out.bytes_ = bytes.data();
  out.size_ = bytes.size();
  SGL_RETURN_IF_ERROR(out.parse(options));
  return out;
}

Status GgufFile::parse(const GgufReadOptions& options) {
  const std::string& file = path_;
  Reader r{Cursor(bytes_, size_, file), HeaderBudget(options.max_header_bytes, file), file};
  Cursor& in = r.in;

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
  SGL_ASSIGN_OR_RETURN(version_, in.scalar<uint32_t>("version"));
  if (version_ != 2 && version_ != 3) {
    // A big-endian file reads as a byte-swapped small version (e.g. 0x03000000).
    if ((version_ & 0xffffu) == 0 && (version_ >> 24) >= 1 && (version_ >> 24) <= 3) {
      return unimplemented(file + ": big-endian GGUF files are not supported");
    }
    return unimplemented(file + ": GGUF version " + std::to_string(version_) +
                         " is not supported (supported: 2, 3)");
  }
  SGL_ASSIGN_OR_RETURN(uint64_t n_tensors, in.scalar<uint64_t>("tensor count"));
  SGL_ASSIGN_OR_RETURN(uint64_t n_kv, in.scalar<uint64_t>("metadata count"));
  // Each key-value pair takes at least 8 (key length) + 4 (type) + 1 bytes.
  if (n_kv > in.remaining() / 13) {
    return data_loss("truncated GGUF file " + file + ": metadata count " + std::to_string(n_kv) +
                     " cannot fit in the " + std::to_string(in.remaining()) + " bytes left");
  }

  metadata_ = GgufMetadata(file);
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string where = "metadata key #" + std::to_string(i);
    Cursor probe = in;
    SGL_ASSIGN_OR_RETURN(uint64_t key_len, probe.string_length(where));
    SGL_RETURN_IF_ERROR(r.budget.charge(key_len + GgufMetadata::kEntryOverhead, where));
    SGL_ASSIGN_OR_RETURN(std::string key, in.string(where));
    const std::string what = "metadata key '" + key + "'";
    SGL_ASSIGN_OR_RETURN(uint32_t type_id, in.scalar<uint32_t>(what + " type"));
    if (!is_known_value_type(type_id)) {
      return data_loss(file + ": " + what + " has unknown value type " + std::to_string(type_id));
    }
    SGL_ASSIGN_OR_RETURN(GgufValue value, read_value(r, static_cast<GgufValueType>(type_id), what));
    SGL_RETURN_IF_ERROR(metadata_.insert(std::move(key), std::move(value)));
  }

  if (const GgufValue* a = metadata_.find("general.alignment")) {
    const uint32_t* align = std::get_if<uint32_t>(&a->storage());
    if (align == nullptr) {
      return data_loss(file + ": metadata key 'general.alignment' is " + a->type_description() +
                       ", expected uint32");
    }
    if (*align == 0 || (*align & (*align - 1)) != 0) {
      return data_loss(file + ": general.alignment " + std::to_string(*align) +
                       " is not a power of two");
    }
    alignment_ = *align;
  }

  if (n_tensors > in.remaining() / kMinTensorInfoBytes) {
    return data_loss("truncated GGUF file " + file + ": tensor count " + std::to_string(n_tensors) +
                     " cannot fit in the " + std::to_string(in.remaining()) + " bytes left");
  }
  // Each info, its index entry and their bookkeeping.
  constexpr uint64_t kTensorOverhead =
      sizeof(GgufTensorInfo) + sizeof(std::pair<const std::string, size_t>) + 4 * sizeof(void*);
  SGL_RETURN_IF_ERROR(r.budget.charge(n_tensors * kTensorOverhead, "the tensor count"));
  tensors_.resize(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo& info = tensors_[i];
    SGL_RETURN_IF_ERROR(read_tensor_info(r, i, info));
    auto [it, inserted] = tensor_index_.emplace(info.name, static_cast<size_t>(i));
    if (!inserted) return data_loss(file + ": duplicate tensor name '" + info.name + "'");
  }

  // The data section starts at the next multiple of the alignment.
  const uint64_t header_end = in.pos();
  const uint64_t size = size_;
  data_offset_ = header_end + (alignment_ - header_end % alignment_) % alignment_;
  if (n_tensors > 0 && data_offset_ > size) {
    return data_loss("truncated GGUF file " + file + ": the data section should start at offset " +
                     std::to_string(data_offset_) + ", the file has " + std::to_string(size) +
                     " bytes");
  }
  const uint64_t data_size = n_tensors > 0 ? size - data_offset_ : 0;
  for (GgufTensorInfo& info : tensors_) {
    const std::string named = "tensor '" + info.name + "'";
    if (info.offset % alignment_ != 0) {
      return data_loss(file + ": " + named + " offset " + std::to_string(info.offset) +
                       " is not a multiple of the alignment " + std::to_string(alignment_));
    }
    if (info.offset > data_size || info.nbytes > data_size - info.offset) {
      return data_loss("truncated GGUF file " + file + ": " + named + " (" +
                       std::to_string(info.nbytes) + " bytes at data offset " +
                       std::to_string(info.offset) + ") runs past the end of the file: the data " +
                       "section has " + std::to_string(data_size) + " bytes, the file " +
                       std::to_string(size));
    }
    info.data = bytes_ + data_offset_ + info.offset;
  }
  return Status::ok_status();
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
