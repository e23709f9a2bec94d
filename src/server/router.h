// Router: method + path -> handler, API-key authentication (each route's AuthLevel), 404/405, the
// routes a server of the other kind (generation / embedding model) does not serve (400), the text
// routes of a server without a tokenizer (400), and the exception boundary (a handler that throws
// answers 500).
#pragma once

#include <string>
#include <vector>

#include "server/http_types.h"
#include "server/server_context.h"

namespace sgl::server {

class Router {
 public:
  explicit Router(ServerContext& ctx);
  // Thread-safe; never throws.
  Reply handle(const HttpRequest& request) noexcept;

 private:
  using Handler = Reply (*)(ServerContext&, const HttpRequest&);
  // Which model a route needs: a server is either generative or an embedding model, as SGLang's.
  enum class Needs { kAny, kGeneration, kEmbedding };
  struct Route {
    std::string path;
    bool prefix = false;  // path is a prefix ("/v1/models/")
    std::vector<std::string> methods;
    Handler handler;
    AuthLevel auth = AuthLevel::kNormal;
    Needs needs = Needs::kAny;
    // Text in or out on every request: refused without a tokenizer (--skip-tokenizer-init).
    // The routes that also take token ids check their prompts instead (check_prompts).
    bool needs_tokenizer = false;
    // The body goes to --log-requests at levels 2 and 3 (SGLang's OpenAI routes log theirs).
    bool logs_body = false;
  };
  // endpoint: set to the metrics' label of the request's route ("unmatched": none).
  Reply dispatch(const HttpRequest& request, std::string& endpoint);

  ServerContext& ctx_;
  std::vector<Route> routes_;
};

}  // namespace sgl::server
