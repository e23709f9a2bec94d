// POST /tokenize (on the work pool, text length bounded) and /detokenize.
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>

#include "server/engine_request.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/openai_json.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"
#include "server/tokenize_reply.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using request_json::json_response;

}  // namespace

Reply handle_tokenize(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_tokenize_request(request.body);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  for (const std::string& prompt : parsed->prompts) {
    if (Status s = check_text_length(ctx, prompt.size(), "prompt"); !s.ok()) {
      return Reply::of(error_response(s));
    }
  }
  auto input = std::make_shared<const TokenizeInput>(std::move(parsed).value());
  return PreparedReply::submit(ctx, false, [&ctx, input](const std::atomic<bool>&) {
    HttpResponse response;
    response.body = tokenize_reply_body(ctx.tokenizer, *input, ctx.info.context_length);
    return Reply::of(std::move(response));
  });
}

Reply handle_detokenize(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_detokenize_request(request.body);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  for (int32_t id : parsed->tokens) {
    if (id >= ctx.tokenizer.vocab_size()) {
      return Reply::of(error_response(
          400, "token id " + std::to_string(id) + " is outside the vocabulary", "tokens"));
    }
  }
  tokenizer::DecodeOptions options;
  options.skip_special_tokens = parsed->skip_special_tokens;
  return Reply::of(json_response({{"text", ctx.tokenizer.decode(parsed->tokens, options)}}));
}

}  // namespace sgl::server
