// safetensors reader: POSIX mmap, fully validated header parsing, sharded checkpoints.
#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

namespace sgl::model {
namespace {

using Json = nlohmann::json;

// The reference implementation refuses headers above 100 MB; so do we, before parsing.
constexpr uint64_t kMaxHeaderBytes = 100ull * 1024 * 1024;

std::string errno_text(int err) { return std::strerror(err); }

std::optional<DType> safetensors_dtype(std::string_view name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  if (name == "I32") return DType::kI32;
  if (name == "I64") return DType::kI64;
  return std::nullopt;
}

// A non-negative integer that fits uint64, or nullopt.
std::optional<uint64_t> as_u64(const Json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) {
    auto n = v.get<int64_t>();
    if (n >= 0) return static_cast<uint64_t>(n);
  }
  return std::nullopt;
}

// Validates one tensor entry of the header and fills `info`.
Status parse_tensor_entry(const std::string& file, const std::string& name, const Json& entry,
                          const uint8_t* data_section, uint64_t data_size, TensorInfo& info) {
  const std::string where = file + ": tensor '" + name + "'";
  if (!entry.is_object()) return data_loss(where + ": header entry must be an object");

  auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    return data_loss(where + ": missing or non-string 'dtype'");
  }
  const std::string dtype_name_str = dtype_it->get<std::string>();
  std::optional<DType> dtype = safetensors_dtype(dtype_name_str);
  if (!dtype) {
    return unimplemented(where + ": dtype '" + dtype_name_str +
                         "' is not supported (supported: F32, F16, BF16, I32, I64)");
  }

  auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array()) {
    return data_loss(where + ": missing or non-list 'shape'");
  }
  std::vector<int64_t> shape;
  uint64_t numel = 1;
  bool overflow = false;
  for (const Json& d : *shape_it) {
    std::optional<uint64_t> dim = as_u64(d);
    if (!dim || *dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return data_loss(where + ": shape " + shape_it->dump() + " must hold non-negative integers");
    }
    shape.push_back(static_cast<int64_t>(*dim));
    overflow = overflow || __builtin_mul_overflow(numel, *dim, &numel);
  }

  auto offsets_it = entry.find("data_offsets");
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
    return data_loss(where + ": 'data_offsets' must be a list [begin, end]");
  }
  std::optional<uint64_t> begin = as_u64((*offsets_it)[0]);
  std::optional<uint64_t> end = as_u64((*offsets_it)[1]);
  if (!begin || !end) {
    return data_loss(where + ": data_offsets " + offsets_it->dump() +
                     " must be non-negative integers");
  }
  if (*end < *begin) {
    return data_loss(where + ": data_offsets " + offsets_it->dump() + " end before begin");
  }
  if (*end > data_size) {
    return data_loss(where + ": data_offsets " + offsets_it->dump() +
                     " run past the data section (" + std::to_string(data_size) + " bytes)");
  }
  const uint64_t nbytes = *end - *begin;
  uint64_t expected = 0;
  overflow = overflow || __builtin_mul_overflow(numel, dtype_size(*dtype), &expected);
  if (overflow || nbytes != expected) {
    return data_loss(where + ": holds " + std::to_string(nbytes) + " bytes but shape " +
                     shape_it->dump() + " of " + dtype_name_str + " needs " +
                     (overflow ? std::string("more than 2^64") : std::to_string(expected)));
  }

  info.name = name;
  info.dtype = *dtype;
  info.shape = std::move(shape);
  info.nbytes = static_cast<size_t>(nbytes);
  info.file = file;
  info.data = data_section + *begin;
  return Status::ok_status();
}

// A shard name from the index must stay inside the model directory.
bool is_safe_relative(const std::string& name) {
  std::filesystem::path p(name);
  if (name.empty() || p.is_absolute()) return false;
  for (const auto& part : p) {
    if (part == "..") return false;
  }
  return true;
}

}  // namespace

// ---- MappedFile ----

Result<MappedFile> MappedFile::open(const std::filesystem::path& path) {
  const std::string name = path.string();
  int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return not_found(name + ": file not found");
    return invalid_argument(name + ": cannot open: " + errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return invalid_argument(name + ": cannot stat: " + errno_text(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument(name + ": not a regular file");
  }
  MappedFile file;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {  // mmap of zero bytes fails; an empty file is an empty mapping.
    void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return invalid_argument(name + ": mmap failed: " + errno_text(err));
    }
    file.data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
  return file;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

// ---- SafetensorsFile ----

Result<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
  const std::string file = path.string();
  SafetensorsFile out;
  SGL_ASSIGN_OR_RETURN(out.mapping_, MappedFile::open(path));
  const uint8_t* bytes = out.mapping_.data();
  const uint64_t size = out.mapping_.size();

  if (size < 8) {
    return data_loss(file + ": truncated: " + std::to_string(size) +
                     " bytes, too short for the 8-byte header length");
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];  // little-endian
  if (header_len > size - 8) {
    return data_loss(file + ": header length " + std::to_string(header_len) +
                     " exceeds the file size (" + std::to_string(size) + " bytes)");
  }
  if (header_len > kMaxHeaderBytes) {
    return data_loss(file + ": header length " + std::to_string(header_len) +
                     " exceeds the 100 MB limit");
  }

  const char* header_begin = reinterpret_cast<const char*>(bytes + 8);
  Json header;
  try {
    header = Json::parse(header_begin, header_begin + header_len);
  } catch (const Json::exception& e) {
    return data_loss(file + ": corrupt JSON header: " + e.what());
  }
  if (!header.is_object()) return data_loss(file + ": JSON header must be an object");

  const uint8_t* data_section = bytes + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (entry.is_null()) continue;
      if (!entry.is_object()) return data_loss(file + ": __metadata__ must be an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          return data_loss(file + ": __metadata__ value of '" + key + "' must be a string");
        }
        out.metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    TensorInfo info;
    SGL_RETURN_IF_ERROR(parse_tensor_entry(file, name, entry, data_section, data_size, info));
    out.tensors_.emplace(name, std::move(info));
  }
  return out;
}

// ---- Checkpoint ----

Result<std::unique_ptr<Checkpoint>> Checkpoint::open(const std::filesystem::path& model_dir) {
  const std::string dir = model_dir.string();
  std::error_code ec;
  if (!std::filesystem::is_directory(model_dir, ec)) {
    return not_found(dir + ": model directory not found");
  }
  auto ckpt = std::make_unique<Checkpoint>();

  // As transformers: a single model.safetensors wins over an index.
  const std::filesystem::path single = model_dir / "model.safetensors";
  const std::filesystem::path index_path = model_dir / "model.safetensors.index.json";
  if (std::filesystem::exists(single, ec)) {
    SGL_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(single));
    ckpt->files_.push_back(std::move(f));
  } else if (std::filesystem::exists(index_path, ec)) {
    const std::string index_name = index_path.string();
    std::ifstream in(index_path, std::ios::binary);
    if (!in) return invalid_argument(index_name + ": cannot open for reading");
    std::ostringstream text;
    text << in.rdbuf();
    Json index;
    try {
      index = Json::parse(text.str());
    } catch (const Json::exception& e) {
      return data_loss(index_name + ": corrupt JSON: " + e.what());
    }
    if (!index.is_object()) return data_loss(index_name + ": top level must be an object");
    auto wm = index.find("weight_map");
    if (wm == index.end() || !wm->is_object()) {
      return data_loss(index_name + ": missing or non-object 'weight_map'");
    }
    // Shard file name -> tensors the index places in it.
    std::map<std::string, std::vector<std::string>> shards;
    for (const auto& [tensor, shard] : wm->items()) {
      if (!shard.is_string() || !is_safe_relative(shard.get<std::string>())) {
        return data_loss(index_name + ": weight_map entry for tensor '" + tensor +
                         "' must be a file name inside the model directory, got " + shard.dump());
      }
      shards[shard.get<std::string>()].push_back(tensor);
    }
    if (shards.empty()) return data_loss(index_name + ": weight_map is empty");
    for (const auto& [shard, tensors] : shards) {
      const std::filesystem::path shard_path = model_dir / shard;
      if (!std::filesystem::exists(shard_path, ec)) {
        return not_found(index_name + ": shard '" + shard + "' (holding tensor '" +
                         tensors.front() + "') not found in " + dir);
      }
      SGL_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(shard_path));
      for (const std::string& tensor : tensors) {
        if (f.tensors().count(tensor) == 0) {
          return data_loss(index_name + ": tensor '" + tensor + "' is mapped to shard '" + shard +
                           "' which does not contain it");
        }
      }
      ckpt->files_.push_back(std::move(f));
    }
  } else {
    return not_found(dir + ": no model.safetensors or model.safetensors.index.json");
  }

  // Built once files_ is final: the TensorInfo nodes live in each file's std::map.
  for (const SafetensorsFile& f : ckpt->files_) {
    for (const auto& [name, info] : f.tensors()) {
      auto [it, inserted] = ckpt->index_.emplace(name, &info);
      if (!inserted) {
        return data_loss(dir + ": tensor '" + name + "' appears in both " + it->second->file +
                         " and " + info.file);
      }
    }
  }
  return ckpt;
}

const TensorInfo* Checkpoint::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (const auto& [name, info] : index_) out.push_back(name);
  return out;
}

}  // namespace sgl::model
