// Byte counts as the logs and messages print them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace sgl {

// "12.34 GiB".
inline std::string format_gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", bytes / double(int64_t{1} << 30));
  return text;
}

}  // namespace sgl
