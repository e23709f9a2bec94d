// A chat request's work on a pool thread, shared by /v1/chat/completions, /v1/messages and
// /v1/responses: the conversation rendered by the chat template (within a time budget),
// tokenized, and submitted to the engine as n choices.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/choice_stream.h"
#include "server/openai_types.h"
#include "server/server_context.h"

namespace sgl::server {

// kInvalidArgument when the server has no chat template (checked before a request queues).
Status check_chat_template(const ServerContext& ctx);

// The conversation's prompt ids: rendered by the chat template and tokenized, or the request's
// input_ids (checked); `*prompt` gets the prompt's text. Errors as submit_chat's.
Result<std::vector<int32_t>> chat_prompt_ids(const ServerContext& ctx, const ChatRequest& req,
                                             const std::atomic<bool>& cancelled,
                                             std::string* prompt);

struct SubmittedChat {
  int64_t prompt_tokens = 0;
  // The prompt's ids, when the request lists them (return_prompt_token_ids, return_token_ids).
  std::vector<int32_t> prompt_ids;
  std::vector<std::unique_ptr<ChoiceStream>> choices;  // req.sampling.n of them
  bool reasoning = false;   // a reasoning parser separates reasoning_content
  bool tool_calls = false;  // tool calls are parsed out of the text
};

// Stops early once `cancelled` (the client went away). Errors: a template that fails or runs
// out of time (kInvalidArgument), the engine request checks, a full queue.
Result<SubmittedChat> submit_chat(ServerContext& ctx, const ChatRequest& req,
                                  const std::atomic<bool>& cancelled);

}  // namespace sgl::server
