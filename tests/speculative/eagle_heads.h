// Where the tests find scripts/make_eagle_heads.py's random EAGLE heads: the build writes them
// into tests/speculative/eagle_heads in the build folder; SGL_EAGLE_HEADS in the environment
// overrides it (binaries carried to the GPU machine, scripts/gpu_check.sh).
#pragma once

#include <filesystem>

#include "test_paths.h"

namespace sgl::test {

inline std::filesystem::path eagle_heads_dir() {
  return path_from_env("SGL_EAGLE_HEADS", test_build_dir("speculative") / "eagle_heads");
}

}  // namespace sgl::test
