// EmbeddingReply: the deferred reply of an embedding request (/v1/embeddings, /encode,
// /health_generate on an embedding server): waits for every input's embedding, keeps the
// request in the registry while it runs (so /abort_request and the drain at shutdown find it),
// aborts what is unfinished when the client goes away, then answers with the body its route
// builds from the results.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/request_stream.h"
#include "server/http_types.h"
#include "server/server_context.h"

namespace sgl::server {

// One input's result.
struct Encoded {
  std::vector<float> embedding;  // f32 [ServerInfo::embedding_size()]
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;
};

class EmbeddingReply final : public DeferredReply {
 public:
  // The route's response from every input's result, in input order, and the seconds since the
  // reply was made.
  using Format = std::function<HttpResponse(const std::vector<Encoded>& results, double seconds)>;

  // `id` is the request id clients see (and may pass to /abort_request); `streams` the inputs'
  // engine requests (Engine::encode), in input order. log_metrics false (SGLang's field: a health
  // probe's): the inputs count in no request metric and no --log-requests line.
  EmbeddingReply(ServerContext& ctx, std::string id,
                 std::vector<std::shared_ptr<engine::RequestStream>> streams, Format format,
                 bool log_metrics = true);
  ~EmbeddingReply() override;  // unregisters; unfinished inputs abort

  void start(std::function<void()> wake) override;
  Progress poll() override;
  void cancel() override;

 private:
  ServerContext& ctx_;
  const std::vector<std::shared_ptr<engine::RequestStream>> streams_;
  Format format_;
  const bool log_metrics_;
  std::vector<std::optional<Encoded>> results_;  // per input, once it finished with one
  std::vector<bool> finished_;                   // per input: its engine request ended
  std::optional<std::string> aborted_;           // why an input ended without an embedding
  double start_s_;
  uint64_t registry_handle_ = 0;
  bool done_ = false;
};

// Encodes each prompt (token ids): checks them all against the model (check_prompt_ids), then
// submits each (Engine::encode) at `priority`. If a submission fails, the requests already
// submitted are aborted and its error returned (a full queue is kResourceExhausted -> 503).
// `logged`: each goes to --log-requests' received lines (a health probe's do not).
Result<std::vector<std::shared_ptr<engine::RequestStream>>> submit_encodes(
    ServerContext& ctx, const std::vector<std::vector<int32_t>>& prompts, bool logged,
    std::optional<int64_t> priority);

}  // namespace sgl::server
