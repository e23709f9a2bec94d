// Whole-file reading for tokenizer assets, transparently gunzipping *.gz files.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "core/status.h"

namespace sgl::tokenizer {

// Far past any real tokenizer asset (the largest tokenizer.json files are tens of MB); a file,
// or gzip data, that decompresses to more is refused rather than read into memory.
inline constexpr size_t kMaxTokenizerFileBytes = size_t{512} << 20;

// Contents of `path`; gzip data (by magic number) is decompressed. NotFound if missing,
// DataLoss on read or decompression errors or past `max_bytes`; messages name the file.
Result<std::string> read_file(const std::filesystem::path& path,
                              size_t max_bytes = kMaxTokenizerFileBytes);

}  // namespace sgl::tokenizer
