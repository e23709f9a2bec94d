// Shared helpers for tests that read ../shared/testdata.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "test_paths.h"

namespace sgl::test {

inline std::filesystem::path model_dir(const std::string& name) {
  return testdata_dir() / "models" / name;
}

// The default model's GGUF as scripts/fetch_default_model.sh caches it: $SGL_SMOLLM2_GGUF, else
// $SGL_CACHE_DIR (or ~/.cache/sgl.cpp) / SmolLM2-135M-Instruct.Q4_1.gguf. Tests skip when absent.
inline std::filesystem::path smollm2_gguf_path() {
  if (const char* p = std::getenv("SGL_SMOLLM2_GGUF"); p != nullptr && *p) return p;
  std::filesystem::path cache;
  if (const char* c = std::getenv("SGL_CACHE_DIR"); c != nullptr && *c) {
    cache = c;
  } else if (const char* home = std::getenv("HOME")) {
    cache = std::filesystem::path(home) / ".cache" / "sgl.cpp";
  }
  return cache / "SmolLM2-135M-Instruct.Q4_1.gguf";
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
