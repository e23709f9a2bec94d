// Server-sent events framing.
#include "server/sse.h"

namespace sgl::server {

std::string sse_data(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 8);
  size_t start = 0;
  for (;;) {
    const size_t end = payload.find('\n', start);
    out += "data: ";
    out += payload.substr(start, end == std::string_view::npos ? end : end - start);
    out += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  out += '\n';
  return out;
}

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace sgl::server
