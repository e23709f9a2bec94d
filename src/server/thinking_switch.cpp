// The thinking switch's checks (thinking_switch.h).
#include "server/thinking_switch.h"

#include <string>

namespace sgl::server {

Status check_thinking_switch(const ServerContext& ctx, const ChatRequest& req,
                             std::string_view field) {
  if (!req.thinking) return Status::ok_status();
  const bool separated = !ctx.info.reasoning_parser.empty();
  if (*req.thinking && !separated) {
    return invalid_argument(std::string(field) +
                            " turns thinking on, which needs the server started with "
                            "--reasoning-parser (the model's thinking is not separated)");
  }
  // NOTE: a template that never names enable_thinking cannot be switched by it.
  if (!*req.thinking && separated &&
      (ctx.chat_template == nullptr ||
       ctx.chat_template->source().find("enable_thinking") == std::string::npos)) {
    return invalid_argument(
        std::string(field) + " turns thinking off, which needs a chat template " +
        "that reads enable_thinking; " + ctx.info.chat_template_origin + " does not");
  }
  return Status::ok_status();
}

}  // namespace sgl::server
