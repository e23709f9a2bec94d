// GGUF reader: header, typed metadata and tensor infos of a .gguf file (versions 2 and 3), mmap'd.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/ggml_type.h"
#include "model/gguf_metadata.h"
#include "model/safetensors.h"

namespace sgl::model {

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

struct GgufReadOptions {
  // Memory the parsed header may take: metadata (GgufMetadata::memory_bytes: keys, values,
  // packed arrays) and tensor infos. A 256k-token vocabulary's tokens, scores, types and merges
  // take ~15 MB and a model's tensor infos well under 1 MB each 1000 tensors; 512 MiB leaves ample
  // room while a hostile file cannot exhaust the host. Past it, open() fails before allocating.
  uint64_t max_header_bytes = uint64_t{512} << 20;
};

// A .gguf file (versions 2 and 3, little-endian). open() validates the whole header: magic,
// version, every metadata value, tensor infos (known types, at most 4 dims, rows a whole number
// of blocks, aligned offsets, data inside the file); counts and lengths are checked against the
// bytes left, and the metadata's memory against GgufReadOptions, before anything is allocated
// from them. Move-only; tensor data pointers stay valid while the file lives (moves included).
class GgufFile {
 public:
  static constexpr uint64_t kDefaultAlignment = 32;
  static constexpr int kMaxDims = 4;

  // Errors: NotFound "no such file or directory: PATH", InvalidArgument "not a regular file:
  // PATH", DataLoss "truncated GGUF file PATH: ..." and the like for corrupt files.
  static Result<GgufFile> open(const std::filesystem::path& path,
                               const GgufReadOptions& options = {});
  // Parses `bytes` in place; they are borrowed and must outlive the file (tensor data points
  // into them). `name` stands for the path in messages. For fuzzing and tests.
  static Result<GgufFile> from_bytes(std::span<const uint8_t> bytes, std::string name,
                                     const GgufReadOptions& options = {});

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }      // general.alignment, default 32
  uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
  const GgufMetadata& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }  // in file order
  // nullptr when absent.
  const GgufTensorInfo* find_tensor(std::string_view name) const;

 private:
  // Parses bytes_[0, size_) into the other members.
  Status parse(const GgufReadOptions& options);

  std::string path_;
  MappedFile mapping_;  // empty for from_bytes
  const uint8_t* bytes_ = nullptr;
  size_t size_ = 0;
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
