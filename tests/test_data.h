// Shared helpers for tests that read ../shared/testdata.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace sgl::test {

// SGL_TESTDATA_DIR in the environment overrides the build-time path (binaries carried to the
// GPU machine find the data there).
inline std::filesystem::path testdata_dir() {
  const char* env = std::getenv("SGL_TESTDATA_DIR");
  return env != nullptr ? env : SGL_TESTDATA_DIR;
}
inline std::filesystem::path model_dir(const std::string& name) {
  return testdata_dir() / "models" / name;
}

inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

inline nlohmann::json golden(const std::string& model) {
  return read_json(testdata_dir() / "golden" / (model + ".json"));
}

}  // namespace sgl::test
