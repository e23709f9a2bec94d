// Server-sent events framing: `data: ...` events and the OpenAI stream terminator.
#pragma once

#include <string>
#include <string_view>

namespace sgl::server {

// One event carrying `payload`; a payload with line breaks becomes several data lines.
std::string sse_data(std::string_view payload);
// "data: [DONE]\n\n"
std::string sse_done();

}  // namespace sgl::server
