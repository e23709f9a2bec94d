// POST /tokenize and /detokenize.
#include <nlohmann/json.hpp>

#include "server/errors.h"
#include "server/handlers.h"
#include "server/openai_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;

HttpResponse json_response(const json& body) {
  HttpResponse r;
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

}  // namespace

Reply handle_tokenize(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_tokenize_request(request.body);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  tokenizer::EncodeOptions options;
  options.add_special_tokens = parsed->add_special_tokens;
  json tokens = json::array(), counts = json::array();
  for (const std::string& prompt : parsed->prompts) {
    std::vector<int32_t> ids = ctx.tokenizer.encode(prompt, options);
    counts.push_back(ids.size());
    tokens.push_back(std::move(ids));
  }
  if (!parsed->batch) {
    return Reply::of(json_response(
        {{"tokens", tokens[0]}, {"count", counts[0]}, {"max_model_len", ctx.info.context_length}}));
  }
  return Reply::of(json_response(
      {{"tokens", tokens}, {"count", counts}, {"max_model_len", ctx.info.context_length}}));
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
