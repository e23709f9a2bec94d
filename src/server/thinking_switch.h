// Whether this server can honour a request's thinking switch (the Responses API's
// reasoning.effort, the Messages API's thinking.type): thinking on needs --reasoning-parser (its
// text comes back as reasoning items / thinking blocks); thinking off needs, with a reasoning
// parser, a chat template that reads enable_thinking (as Qwen3's does), as that is what turns it
// off. Without a reasoning parser the model is served as one that does not think: off asks for
// nothing.
#pragma once

#include <string_view>

#include "core/status.h"
#include "server/openai_types.h"
#include "server/server_context.h"

namespace sgl::server {

// kInvalidArgument naming `field` when req.thinking cannot be honoured.
Status check_thinking_switch(const ServerContext& ctx, const ChatRequest& req,
                             std::string_view field);

}  // namespace sgl::server
