// POST /tokenize (on the work pool, text length bounded) and /detokenize.
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>

#include "server/engine_request.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/openai_json.h"
#include "server/prepared_reply.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;

HttpResponse json_response(const json& body) {
  HttpResponse r;
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

// On a pool thread.
HttpResponse tokenize(const ServerContext& ctx, const TokenizeInput& input) {
  tokenizer::EncodeOptions options;
  options.add_special_tokens = input.add_special_tokens;
  json tokens = json::array(), counts = json::array();
  for (const std::string& prompt : input.prompts) {
    std::vector<int32_t> ids = ctx.tokenizer.encode(prompt, options);
    counts.push_back(ids.size());
    tokens.push_back(std::move(ids));
  }
  if (!input.batch) {
    return json_response(
        {{"tokens", tokens[0]}, {"count", counts[0]}, {"max_model_len", ctx.info.context_length}});
  }
  return json_response(
      {{"tokens", tokens}, {"count", counts}, {"max_model_len", ctx.info.context_length}});
}

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
    return Reply::of(tokenize(ctx, *input));
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
