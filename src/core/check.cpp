// Abort path of SGL_CHECK.
#include "core/check.h"

#include <cstdio>
#include <cstdlib>

namespace sgl::detail {

CheckFailure::CheckFailure(const char* file, int line, const char* condition)
    : file_(file), line_(line) {
  stream_ << "Check failed: " << condition << " ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "FATAL %s:%d: %s\n", file_, line_, stream_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace sgl::detail
