// Runs a command line in a shell and captures its output and exit code (CLI tests).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include "test_paths.h"

namespace sgl::test {

struct RunResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

// `binary` is relative to the build directory (e.g. "src/app/sgl-generate").
inline RunResult run_tool(const std::string& binary, const std::string& args) {
  const std::string cmd = (binary_dir() / binary).string() + " " + args + " 2>&1";
  RunResult result;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) result.out.append(buf.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace sgl::test
