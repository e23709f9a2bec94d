// read_file: plain or gzip-compressed file contents via zlib's gz* API.
#include "tokenizer/file_reader.h"

#include <zlib.h>

#include <system_error>

namespace sgl::tokenizer {

Result<std::string> read_file(const std::filesystem::path& path, size_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return not_found(path.string() + ": no such file");
  }
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return data_loss(path.string() + ": cannot open");
  std::string contents;
  char buffer[1 << 16];
  while (true) {
    const int n = gzread(file, buffer, sizeof(buffer));
    if (n < 0) {
      int code = 0;
      const std::string message = gzerror(file, &code);
      gzclose(file);
      return data_loss(path.string() + ": read failed: " + message);
    }
    if (n == 0) break;
    if (contents.size() + static_cast<size_t>(n) > max_bytes) {
      gzclose(file);
      return data_loss(path.string() + ": larger than " + std::to_string(max_bytes) +
                       " bytes (decompressed)");
    }
    contents.append(buffer, static_cast<size_t>(n));
  }
  // NOTE: gzread does not report a truncated gzip stream; gzclose_r does (Z_BUF_ERROR).
  const int rc = gzclose_r(file);
  if (rc != Z_OK) return data_loss(path.string() + ": truncated or corrupt gzip data");
  return contents;
}

}  // namespace sgl::tokenizer
