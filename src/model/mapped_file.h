// MappedFile: a read-only memory map of a whole regular file, and small files read whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "core/status.h"

namespace sgl::model {

// Read-only memory map of a whole file (RAII, move-only).
class MappedFile {
 public:
  // Only regular files: a FIFO or a device is refused without blocking or reading from it.
  // Errors: NotFound "no such file or directory: PATH", InvalidArgument "not a regular file:
  // PATH" or "cannot open PATH: <reason>".
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

// The contents of a small regular file (config.json, an index json), with MappedFile::open's
// errors and InvalidArgument when it holds more than `max_bytes`.
Result<std::string> read_small_file(const std::filesystem::path& path, uint64_t max_bytes);

}  // namespace sgl::model
