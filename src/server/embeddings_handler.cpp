// POST /v1/embeddings (OpenAI) and /encode (SGLang native): an embedding model's vectors for
// text or token-id inputs, one or a list; POST /v1/classify (SGLang's): a classification model's
// label and probabilities for each.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "core/base64.h"
#include "core/check.h"
#include "server/embedding_reply.h"
#include "server/embeddings_json.h"
#include "server/engine_request.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"
#include "server/request_registry.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;

// OpenAI's encoding_format "base64": the vector's f32 values as little-endian bytes, in base64.
std::string base64_f32(const std::vector<float>& values) {
  std::string bytes;
  bytes.reserve(values.size() * 4);
  for (float v : values) {
    const auto bits = std::bit_cast<uint32_t>(v);
    for (int shift = 0; shift < 32; shift += 8) bytes.push_back(static_cast<char>(bits >> shift));
  }
  return base64_encode(bytes);
}

// The inputs' token ids (text tokenized with the tokenizer's special tokens, as SGLang does).
std::vector<std::vector<int32_t>> input_ids(const ServerContext& ctx,
                                            const std::vector<PromptInput>& inputs) {
  std::vector<std::vector<int32_t>> ids;
  ids.reserve(inputs.size());
  for (const PromptInput& input : inputs) ids.push_back(prompt_ids(ctx, input));
  return ids;
}

// The client's request id, held until the reply registers it (a duplicate in flight is
// refused, as SGLang does).
Result<RequestRegistry::Claim> claim_rid(ServerContext& ctx, const PoolingRouting& routing) {
  return ctx.registry.claim(routing.rid.empty() ? std::vector<std::string>{}
                                                : std::vector<std::string>{routing.rid});
}

// On a pool thread: tokenizes, submits, and answers with OpenAI's embedding list.
Reply prepare_embeddings(ServerContext& ctx, const EmbeddingRequest& req) {
  auto claim = claim_rid(ctx, req.routing);
  if (!claim.ok()) return Reply::of(error_response(claim.status()));
  auto streams =
      submit_encodes(ctx, input_ids(ctx, req.inputs), /*logged=*/true, req.routing.priority);
  if (!streams.ok()) return Reply::of(error_response(streams.status()));
  // SGLang serves whatever model name a request gives, and answers with it.
  const std::string model = req.model.value_or(ctx.info.served_model_name);
  auto format = [model, base64 = req.base64](const std::vector<Encoded>& results, double) {
    json data = json::array();
    int64_t tokens = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      const std::vector<float>& v = results[i].embedding;
      data.push_back({{"object", "embedding"},
                      {"index", i},
                      {"embedding", base64 ? json(base64_f32(v)) : json(v)}});
      tokens += results[i].prompt_tokens;
    }
    return request_json::json_response(
        {{"object", "list"},
         {"data", std::move(data)},
         {"model", model},
         {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
  };
  return Reply::later(std::make_unique<EmbeddingReply>(ctx, reply_id(req.routing.rid, "embd-"),
                                                       std::move(streams).value(), format),
                      false);
}

// On a pool thread: tokenizes, submits, and answers as SGLang's /encode ({"embedding",
// "meta_info"}, a list of them for a list of inputs).
Reply prepare_encode(ServerContext& ctx, const EncodeInput& req) {
  auto claim = claim_rid(ctx, req.routing);
  if (!claim.ok()) return Reply::of(error_response(claim.status()));
  auto streams =
      submit_encodes(ctx, input_ids(ctx, req.prompts), /*logged=*/true, req.routing.priority);
  if (!streams.ok()) return Reply::of(error_response(streams.status()));
  const std::string id = reply_id(req.routing.rid, "");
  auto format = [id, batch = req.batch](const std::vector<Encoded>& results, double seconds) {
    json items = json::array();
    for (size_t i = 0; i < results.size(); ++i) {
      const Encoded& r = results[i];
      // Nothing is generated: finished by length 0 (max_new_tokens 0), as SGLang reports it.
      json meta = {{"id", batch ? id + "_" + std::to_string(i) : id},
                   {"finish_reason", {{"type", "length"}, {"length", 0}}},
                   {"prompt_tokens", r.prompt_tokens},
                   {"cached_tokens", r.cached_tokens},
                   {"e2e_latency", seconds}};
      items.push_back({{"embedding", r.embedding}, {"meta_info", std::move(meta)}});
    }
    return request_json::json_response(batch ? items : items[0]);
  };
  return Reply::later(std::make_unique<EmbeddingReply>(ctx, id, std::move(streams).value(), format),
                      false);
}

// A classification's reply item (SGLang's ClassifyData): the scores' softmax and the label of
// the highest score (the first of equal ones).
json classify_item(const std::vector<std::string>& labels, const std::vector<float>& scores,
                   size_t index) {
  SGL_CHECK(!scores.empty() && scores.size() == labels.size())
      << scores.size() << " scores for " << labels.size() << " labels";
  const auto best =
      static_cast<size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
  std::vector<double> exps;
  for (float s : scores) exps.push_back(std::exp(static_cast<double>(s) - scores[best]));
  const double sum = std::accumulate(exps.begin(), exps.end(), 0.0);
  json probs = json::array();
  for (double e : exps) probs.push_back(static_cast<float>(e / sum));
  return {{"index", index},
          {"label", labels[best]},
          {"probs", std::move(probs)},
          {"num_classes", scores.size()}};
}

// On a pool thread: tokenizes, submits, and answers as SGLang's /v1/classify.
Reply prepare_classify(ServerContext& ctx, const ClassifyRequest& req) {
  auto claim = claim_rid(ctx, req.routing);
  if (!claim.ok()) return Reply::of(error_response(claim.status()));
  auto streams =
      submit_encodes(ctx, input_ids(ctx, req.inputs), /*logged=*/true, req.routing.priority);
  if (!streams.ok()) return Reply::of(error_response(streams.status()));
  const std::string model = req.model.value_or(ctx.info.served_model_name);
  auto format = [model, labels = ctx.info.labels, created = std::time(nullptr)](
                    const std::vector<Encoded>& results, double) {
    json data = json::array();
    int64_t tokens = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      data.push_back(classify_item(labels, results[i].embedding, i));
      tokens += results[i].prompt_tokens;
    }
    return request_json::json_response({{"id", make_request_id("classify-")},
                                        {"object", "list"},
                                        {"created", created},
                                        {"model", model},
                                        {"data", std::move(data)},
                                        {"usage",
                                         {{"prompt_tokens", tokens},
                                          {"total_tokens", tokens},
                                          {"completion_tokens", 0},
                                          {"prompt_tokens_details", nullptr}}}});
  };
  return Reply::later(std::make_unique<EmbeddingReply>(ctx, reply_id(req.routing.rid, "classify-"),
                                                       std::move(streams).value(), format),
                      false);
}

}  // namespace

Reply handle_embeddings(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_embedding_request(request.body);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  if (parsed->dimensions && *parsed->dimensions != ctx.info.embedding_size()) {
    return Reply::of(error_response(400,
                                    "'dimensions' is not supported: the model's embeddings have " +
                                        std::to_string(ctx.info.embedding_size()) +
                                        " dimensions (no Matryoshka truncation)",
                                    "dimensions"));
  }
  if (Status s = check_prompts(ctx, parsed->inputs, "input"); !s.ok()) {
    return Reply::of(error_response(s));
  }
  auto shared = std::make_shared<const EmbeddingRequest>(std::move(parsed).value());
  return PreparedReply::submit(ctx, false, [&ctx, shared](const std::atomic<bool>&) {
    return prepare_embeddings(ctx, *shared);
  });
}

Reply handle_classify(ServerContext& ctx, const HttpRequest& request) {
  if (ctx.info.labels.empty()) {
    return Reply::of(error_response(400, ctx.info.architecture +
                                             " has no labels: /v1/classify needs a classification "
                                             "or reward model (use /v1/embeddings)"));
  }
  auto parsed = parse_classify_request(request.body);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  if (Status s = check_prompts(ctx, parsed->inputs, "input"); !s.ok()) {
    return Reply::of(error_response(s));
  }
  auto shared = std::make_shared<const ClassifyRequest>(std::move(parsed).value());
  return PreparedReply::submit(ctx, false, [&ctx, shared](const std::atomic<bool>&) {
    return prepare_classify(ctx, *shared);
  });
}

Reply handle_encode(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_encode_request(request.body);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  if (Status s = check_prompts(ctx, parsed->prompts, "text"); !s.ok()) {
    return Reply::of(error_response(s));
  }
  auto shared = std::make_shared<const EncodeInput>(std::move(parsed).value());
  return PreparedReply::submit(ctx, false, [&ctx, shared](const std::atomic<bool>&) {
    return prepare_encode(ctx, *shared);
  });
}

}  // namespace sgl::server
