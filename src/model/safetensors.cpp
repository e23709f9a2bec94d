// safetensors reader: fully validated header parsing over a mapping, sharded checkpoints.
#include "model/safetensors.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>

#include "core/json_nesting.h"

namespace sgl::model {
namespace {

using Json = nlohmann::json;

// The reference implementation refuses headers above 100 MB; so do we, before parsing.
constexpr uint64_t kMaxHeaderBytes = 100ull * 1024 * 1024;
// An index lists each tensor once (~100 bytes each): 64 MiB is far beyond any real model.
constexpr uint64_t kMaxIndexBytes = 64ull << 20;

std::optional<DType> safetensors_dtype(std::string_view name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  if (name == "I32") return DType::kI32;
  if (name == "I64") return DType::kI64;
  if (name == "BOOL") return DType::kBool;
  if (name == "F8_E4M3") return DType::kF8E4M3;  // FP8 checkpoints (model/fp8_weight_source.h)
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

// Validates one tensor entry of the header (all but its range in the file, which the caller
// checks for all entries together) and fills `info` and `*begin`.
Status parse_tensor_entry(const std::string& file, const std::string& name, const Json& entry,
                          TensorInfo& info, uint64_t* begin_offset) {
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
                         "' is not supported (supported: F32, F16, BF16, I32, I64, BOOL)");
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
  *begin_offset = *begin;
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

// ---- SafetensorsFile ----

Result<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
  SafetensorsFile out;
  SGL_ASSIGN_OR_RETURN(out.mapping_, MappedFile::open(path));
  SGL_RETURN_IF_ERROR(out.parse(out.mapping_.data(), out.mapping_.size(), path.string()));
  return out;
}

Result<SafetensorsFile> SafetensorsFile::from_bytes(std::span<const uint8_t> bytes,
                                                    std::string name) {
  SafetensorsFile out;
  SGL_RETURN_IF_ERROR(out.parse(bytes.data(), bytes.size(), name));
  return out;
}

Status SafetensorsFile::parse(const uint8_t* bytes, uint64_t size, const std::string& file) {
  if (size < 8) {
    return data_loss("truncated safetensors file " + file + ": " + std::to_string(size) +
                     " bytes, too short for the 8-byte header length");
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];  // little-endian
  if (header_len > kMaxHeaderBytes) {
    return data_loss(file + ": header length " + std::to_string(header_len) +
                     " exceeds the 100 MB limit");
  }
  if (header_len > size - 8) {
    return data_loss("truncated safetensors file " + file + ": header says at least " +
                     std::to_string(8 + header_len) + " bytes (8 + header length " +
                     std::to_string(header_len) + "), file has " + std::to_string(size));
  }

  const char* header_begin = reinterpret_cast<const char*>(bytes + 8);
  Json header;
  if (Status s = check_json_nesting({header_begin, static_cast<size_t>(header_len)}); !s.ok()) {
    return data_loss(file + ": corrupt JSON header: " + s.message());
  }
  try {
    header = Json::parse(header_begin, header_begin + header_len);
  } catch (const Json::exception& e) {
    return data_loss(file + ": corrupt JSON header: " + e.what());
  }
  if (!header.is_object()) return data_loss(file + ": JSON header must be an object");

  // Every tensor's [begin, end) in the data section, checked together below.
  struct Range {
    uint64_t begin, end;
    TensorInfo* info;
  };
  std::vector<Range> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (entry.is_null()) continue;
      if (!entry.is_object()) return data_loss(file + ": __metadata__ must be an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          return data_loss(file + ": __metadata__ value of '" + key + "' must be a string");
        }
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    TensorInfo info;
    uint64_t begin = 0;
    SGL_RETURN_IF_ERROR(parse_tensor_entry(file, name, entry, info, &begin));
    TensorInfo& stored = tensors_.emplace(name, std::move(info)).first->second;
    ranges.push_back({begin, begin + stored.nbytes, &stored});
  }

  const uint64_t data_size = size - 8 - header_len;
  const Range* last = nullptr;
  for (const Range& r : ranges) {
    if (last == nullptr || r.end > last->end) last = &r;
  }
  if (last != nullptr && last->end > data_size) {
    return data_loss("truncated safetensors file " + file + ": header says " +
                     std::to_string(8 + header_len + last->end) + " bytes, file has " +
                     std::to_string(size) + " (tensor '" + last->info->name + "' ends at byte " +
                     std::to_string(last->end) + " of the data section, which has " +
                     std::to_string(data_size) + ")");
  }
  // NOTE: two tensors sharing bytes is never what a writer meant (safetensors' own reader
  // refuses it too); empty tensors occupy nothing.
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  const Range* previous = nullptr;
  for (const Range& r : ranges) {
    if (r.begin == r.end) continue;
    if (previous != nullptr && r.begin < previous->end) {
      return data_loss(file + ": tensors '" + previous->info->name + "' [" +
                       std::to_string(previous->begin) + ", " + std::to_string(previous->end) +
                       ") and '" + r.info->name + "' [" + std::to_string(r.begin) + ", " +
                       std::to_string(r.end) + ") overlap in the data section");
    }
    previous = &r;
  }
  const uint8_t* data_section = bytes + 8 + header_len;
  for (const Range& r : ranges) r.info->data = data_section + r.begin;
  return Status::ok_status();
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
    SGL_ASSIGN_OR_RETURN(const std::string text, read_small_file(index_path, kMaxIndexBytes));
    Json index;
    if (Status s = check_json_nesting(text); !s.ok()) {
      return data_loss(index_name + ": corrupt JSON: " + s.message());
    }
    try {
      index = Json::parse(text);
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
