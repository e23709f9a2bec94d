// safetensors reader: mmap'd files, header parsing, and sharded checkpoints via the index json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "model/mapped_file.h"

namespace sgl::model {

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

// One .safetensors file. Validates the header fully at open, before anything uses it: JSON
// well-formed, known dtypes, nbytes == numel * dtype size, every tensor's bytes inside the file
// and no two tensors' bytes overlapping. A file shorter than its header says is DataLoss
// "truncated safetensors file PATH: header says N bytes, file has M".
class SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::filesystem::path& path);
  // Parses `bytes` in place; they are borrowed and must outlive the file (tensor data points
  // into them). `name` stands for the path in messages. For fuzzing and tests.
  static Result<SafetensorsFile> from_bytes(std::span<const uint8_t> bytes, std::string name);

  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  // Parses `bytes` (the mapping's or borrowed) into tensors_ and metadata_.
  Status parse(const uint8_t* bytes, uint64_t size, const std::string& file);

  MappedFile mapping_;  // empty for from_bytes
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
