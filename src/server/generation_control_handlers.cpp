// SGLang's generation control for RL trainers and weight syncs: /pause_generation (mode abort,
// retract or in_place) and /continue_generation. Both wait for the engine loops on the admin
// pool: a pause answers once no batch runs.
#include <nlohmann/json.hpp>

#include "server/errors.h"
#include "server/handlers.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using request_json::json_response;

// The body as an object; an empty body is {}.
Result<json> optional_object(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return json::object();
  return request_json::parse_object(body);
}

Result<engine::PauseMode> parse_pause_mode(const json& o) {
  SGL_RETURN_IF_ERROR(request_json::check_fields(o, {"mode"}));
  std::string mode = "abort";  // SGLang's default
  SGL_RETURN_IF_ERROR(request_json::read(o, "mode", mode));
  if (mode == "abort") return engine::PauseMode::kAbort;
  if (mode == "retract") return engine::PauseMode::kRetract;
  if (mode == "in_place") return engine::PauseMode::kInPlace;
  return request_json::field_error("mode", "must be \"abort\", \"retract\" or \"in_place\"");
}

Reply on_admin_pool(ServerContext& ctx, std::function<Reply()> answer) {
  return PreparedReply::submit(
      ctx, ctx.admin_pool, false,
      [answer = std::move(answer)](const std::atomic<bool>&) { return answer(); });
}

}  // namespace

Reply handle_pause_generation(ServerContext& ctx, const HttpRequest& request) {
  Result<json> o = optional_object(request.body);
  if (!o.ok()) return Reply::of(error_response(o.status()));
  Result<engine::PauseMode> mode = parse_pause_mode(*o);
  if (!mode.ok()) return Reply::of(error_response(mode.status()));
  return on_admin_pool(ctx, [&ctx, mode = *mode] {
    ctx.engine.pause_generation(mode);
    return Reply::of(
        json_response({{"message", "Generation paused successfully."}, {"status", "ok"}}));
  });
}

Reply handle_continue_generation(ServerContext& ctx, const HttpRequest& request) {
  Result<json> o = optional_object(request.body);
  if (!o.ok()) return Reply::of(error_response(o.status()));
  // torch_empty_cache: SGLang hands PyTorch's cached blocks back to the driver; sgl.cpp caches
  // none (its weights, KV pool and activations are sized once, at start), so there is nothing to
  // hand back, and the field is taken as done.
  bool torch_empty_cache = false;
  if (Status s = request_json::check_fields(*o, {"torch_empty_cache"}); !s.ok()) {
    return Reply::of(error_response(s));
  }
  if (Status s = request_json::read(*o, "torch_empty_cache", torch_empty_cache); !s.ok()) {
    return Reply::of(error_response(s));
  }
  return on_admin_pool(ctx, [&ctx] {
    ctx.engine.continue_generation();
    return Reply::of(
        json_response({{"message", "Generation continued successfully."}, {"status", "ok"}}));
  });
}

}  // namespace sgl::server
