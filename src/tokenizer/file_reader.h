// Whole-file reading for tokenizer assets, transparently gunzipping *.gz files.
#pragma once

#include <filesystem>
#include <string>

#include "core/status.h"

namespace sgl::tokenizer {

// Contents of `path`; gzip data (by magic number) is decompressed. NotFound if missing,
// DataLoss on read or decompression errors; messages name the file.
Result<std::string> read_file(const std::filesystem::path& path);

}  // namespace sgl::tokenizer
