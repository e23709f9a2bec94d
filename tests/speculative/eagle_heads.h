// Where the tests find scripts/make_eagle_heads.py's random EAGLE heads: the build writes them
// into the folder the target's SGL_EAGLE_HEADS definition names; SGL_EAGLE_HEADS in the
// environment overrides it (binaries carried to the GPU machine, scripts/gpu_check.sh).
#pragma once

#include <cstdlib>
#include <filesystem>

namespace sgl::test {

inline std::filesystem::path eagle_heads_dir() {
  const char* env = std::getenv("SGL_EAGLE_HEADS");
  return std::filesystem::path(env != nullptr ? env : SGL_EAGLE_HEADS);
}

}  // namespace sgl::test
