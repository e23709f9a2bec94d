#include "test_paths.h"

#include <cstdlib>

namespace sgl::test {

std::filesystem::path source_dir() { return SGL_SOURCE_DIR; }

std::filesystem::path binary_dir() { return SGL_BINARY_DIR; }

std::filesystem::path testdata_dir() {
  const char* env = std::getenv("SGL_TESTDATA_DIR");
  return env != nullptr ? env : SGL_TESTDATA_DIR;
}

std::filesystem::path test_data_dir(std::string_view test_folder) {
  return source_dir() / "tests" / test_folder / "data";
}

}  // namespace sgl::test
