#include "test_paths.h"

#include <cstdlib>

namespace sgl::test {

std::filesystem::path source_dir() { return SGL_SOURCE_DIR; }

std::filesystem::path binary_dir() { return SGL_BINARY_DIR; }

std::filesystem::path testdata_dir() { return path_from_env("SGL_TESTDATA_DIR", SGL_TESTDATA_DIR); }

std::filesystem::path test_data_dir(std::string_view test_folder) {
  return source_dir() / "tests" / test_folder / "data";
}

std::filesystem::path test_build_dir(std::string_view test_folder) {
  return binary_dir() / "tests" / test_folder;
}

std::filesystem::path path_from_env(const char* var, std::filesystem::path otherwise) {
  const char* env = std::getenv(var);
  return env != nullptr ? std::filesystem::path(env) : std::move(otherwise);
}

}  // namespace sgl::test
