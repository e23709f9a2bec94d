// safetensors reader: mmap'd files, header parsing, and sharded checkpoints via the index json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace sgl::model {

// Read-only memory map of a whole file (RAII, move-only).
class MappedFile {
 public:
  static Result<MappedFile> open(const std::filesystem::path& path);
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// One tensor inside a checkpoint: dtype, shape and its bytes in the mapped file.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  // Points into the owning SafetensorsFile's mapping.
  // NOTE: not necessarily aligned to the element size (the data section starts at 8 + header
  // length, which writers other than safetensors' own need not pad); copy or use memcpy.
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
  std::string file;  // path of the file, for error messages

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// One .safetensors file. Validates the header fully at open: JSON well-formed, known dtypes,
// offsets inside the data section, nbytes == numel * dtype size.
class SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::filesystem::path& path);

  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  MappedFile mapping_;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// All tensors of a model directory: model.safetensors, or the shards listed by
// model.safetensors.index.json. The checkpoint owns the mappings; TensorInfo pointers stay valid
// while it lives.
class Checkpoint {
 public:
  static Result<std::unique_ptr<Checkpoint>> open(const std::filesystem::path& model_dir);

  // nullptr when absent.
  const TensorInfo* find(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::vector<SafetensorsFile> files_;
  std::map<std::string, const TensorInfo*> index_;
};

}  // namespace sgl::model
