// SGLang's generation control for RL trainers and weight syncs: /pause_generation (mode abort,
// retract or in_place), /continue_generation, /update_weights_from_disk, /update_weight_version
// and /get_weights_by_name. They wait for the engine loops on the admin pool, one at a time: a
// pause answers once no batch runs.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/logging.h"
#include "engine/model_engine.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/paused_in_place.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using request_json::json_response;

Result<engine::PauseMode> parse_pause_mode(const json& o) {
  SGL_RETURN_IF_ERROR(request_json::check_fields(o, {"mode"}));
  std::string mode = "abort";  // SGLang's default
  SGL_RETURN_IF_ERROR(request_json::read(o, "mode", mode));
  if (mode == "abort") return engine::PauseMode::kAbort;
  if (mode == "retract") return engine::PauseMode::kRetract;
  if (mode == "in_place") return engine::PauseMode::kInPlace;
  return request_json::field_error("mode", "must be \"abort\", \"retract\" or \"in_place\"");
}

// SGLang's abort_all_requests: every request the server holds ends with finish reason abort.
void abort_every_request(ServerContext& ctx) {
  for (uint64_t rid : ctx.registry.all_rids()) ctx.engine.abort(rid);
}

// SGLang's UpdateWeightFromDiskReqInput, as far as it asks for something here.
struct WeightUpdate {
  std::string model_path;
  bool abort_all_requests = false;
  std::string weight_version;  // empty: unchanged
  bool keep_pause = false;
  bool flush_cache = true;
};

Result<WeightUpdate> parse_weight_update(const json& o, std::string_view served_load_format) {
  SGL_RETURN_IF_ERROR(request_json::check_fields(
      o, {"model_path", "load_format", "abort_all_requests", "weight_version", "is_async",
          "torch_empty_cache", "keep_pause", "recapture_cuda_graph", "token_step", "flush_cache",
          "manifest"}));
  WeightUpdate u;
  SGL_RETURN_IF_ERROR(request_json::read(o, "model_path", u.model_path));
  if (u.model_path.empty()) return request_json::field_error("model_path", "is required");
  std::optional<std::string> load_format, weight_version;
  SGL_RETURN_IF_ERROR(request_json::read(o, "load_format", load_format));
  if (load_format && *load_format != "auto" && *load_format != served_load_format) {
    return request_json::field_error(
        "load_format", "must be \"auto\" or the server's --load-format (" +
                           std::string(served_load_format) + "), got \"" + *load_format + "\"");
  }
  SGL_RETURN_IF_ERROR(request_json::read(o, "abort_all_requests", u.abort_all_requests));
  SGL_RETURN_IF_ERROR(request_json::read(o, "weight_version", weight_version));
  u.weight_version = weight_version.value_or("");
  SGL_RETURN_IF_ERROR(request_json::read(o, "keep_pause", u.keep_pause));
  SGL_RETURN_IF_ERROR(request_json::read(o, "flush_cache", u.flush_cache));
  // Taken as done: the weights are written where the CUDA graphs read them (no recapture), and
  // no allocator cache holds memory to hand back.
  bool recapture_cuda_graph = false, torch_empty_cache = false, is_async = false;
  SGL_RETURN_IF_ERROR(request_json::read(o, "recapture_cuda_graph", recapture_cuda_graph));
  SGL_RETURN_IF_ERROR(request_json::read(o, "torch_empty_cache", torch_empty_cache));
  SGL_RETURN_IF_ERROR(request_json::read(o, "is_async", is_async));
  if (is_async) {
    return request_json::field_error("is_async",
                                     "true is not supported: the update is done "
                                     "when the reply comes");
  }
  int64_t token_step = 0;
  SGL_RETURN_IF_ERROR(request_json::read(o, "token_step", token_step));
  if (token_step != 0) {
    return request_json::field_error("token_step",
                                     "is not supported: outputs carry no trainer step");
  }
  if (request_json::find(o, "manifest") != nullptr) {
    return request_json::field_error("manifest", "is not supported (a whole checkpoint is read)");
  }
  return u;
}

// SGLang's reply: 200 when the update succeeded, 400 with its message otherwise.
Reply weight_update_reply(bool success, const std::string& message) {
  return Reply::of(
      json_response({{"success", success}, {"message", message}, {"num_paused_requests", 0}},
                    success ? 200 : 400));
}

// The update itself, on the admin pool, with the engines paused: every replica's weights
// overwritten, the cache of the old weights flushed (running requests go on afterwards with the
// new weights, as SGLang's).
Reply update_weights(ServerContext& ctx, const WeightUpdate& u) {
  if (ctx.model_engines.empty()) return weight_update_reply(false, "no model to update");
  if (u.abort_all_requests) abort_every_request(ctx);
  PausedInPlace paused(ctx.engine);
  if (u.keep_pause) paused.keep();
  SGL_LOG_INFO << "updating the weights from " << u.model_path;
  Status status = engine::update_weights_from_disk(ctx.model_engines, u.model_path);
  std::string message = "Succeeded to update model weights.";
  if (status.ok()) {
    ctx.weights.updated(u.model_path, u.weight_version);
    if (!u.weight_version.empty())
      message += " Weight version updated to " + u.weight_version + ".";
    if (u.flush_cache && !ctx.engine.flush_cache()) {
      status = invalid_argument(
          "Weights were updated, but the cache was not flushed because requests are still "
          "running. Retract or finish them, then call /flush_cache.");
    }
  } else if (status.code() == StatusCode::kInternal) {
    ctx.unhealthy = true;  // mixed weights: an orchestrator should replace the server
  }
  if (!status.ok()) {
    SGL_LOG_ERROR << "weight update: " << status.message();
    return weight_update_reply(false, status.message());
  }
  SGL_LOG_INFO << message;
  return weight_update_reply(true, message);
}

}  // namespace

Reply handle_pause_generation(ServerContext& ctx, const HttpRequest& request) {
  Result<json> o = request_json::parse_optional_object(request.body);
  if (!o.ok()) return Reply::of(error_response(o.status()));
  Result<engine::PauseMode> mode = parse_pause_mode(*o);
  if (!mode.ok()) return Reply::of(error_response(mode.status()));
  return under_generation_control(ctx, [&ctx, mode = *mode] {
    ctx.engine.pause_generation(mode);
    // Paused on request now: resuming released memory leaves it paused.
    ctx.released_memory.paused_generation = false;
    return Reply::of(
        json_response({{"message", "Generation paused successfully."}, {"status", "ok"}}));
  });
}

Reply handle_continue_generation(ServerContext& ctx, const HttpRequest& request) {
  Result<json> o = request_json::parse_optional_object(request.body);
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
  return under_generation_control(ctx, [&ctx] {
    if (memory_released(ctx)) {
      return Reply::of(error_response(
          400,
          "memory is released (/release_memory_occupation): generation continues once "
          "/resume_memory_occupation takes it all back"));
    }
    ctx.engine.continue_generation();
    return Reply::of(
        json_response({{"message", "Generation continued successfully."}, {"status", "ok"}}));
  });
}

Reply handle_update_weights_from_disk(ServerContext& ctx, const HttpRequest& request) {
  Result<json> o = request_json::parse_object(request.body);
  if (!o.ok()) return Reply::of(error_response(o.status()));
  Result<WeightUpdate> update = parse_weight_update(*o, ctx.info.load_format);
  if (!update.ok()) return Reply::of(error_response(update.status()));
  return under_generation_control(
      ctx, [&ctx, u = std::move(update).value()] { return update_weights(ctx, u); });
}

// Names the served weights' version without touching them; aborts what runs unless
// abort_all_requests is false (SGLang's default is true).
Reply handle_update_weight_version(ServerContext& ctx, const HttpRequest& request) {
  Result<json> o = request_json::parse_object(request.body);
  if (!o.ok()) return Reply::of(error_response(o.status()));
  std::string version;
  bool abort_all_requests = true;
  Status s = request_json::check_fields(*o, {"new_version", "abort_all_requests"});
  if (s.ok()) s = request_json::read(*o, "new_version", version);
  if (s.ok() && version.empty()) s = request_json::field_error("new_version", "is required");
  if (s.ok()) s = request_json::read(*o, "abort_all_requests", abort_all_requests);
  if (!s.ok()) return Reply::of(error_response(s));
  return under_generation_control(ctx, [&ctx, version, abort_all_requests] {
    if (abort_all_requests) abort_every_request(ctx);
    ctx.weights.set_version(version);
    return Reply::of(json_response({{"success", true},
                                    {"message", "Weight version updated to " + version},
                                    {"new_version", version}}));
  });
}

// A weight as SGLang's get_weights_by_name gives it: its first `truncate_size` rows (values of
// a 1-D one), as f32.
json weight_json(const engine::WeightValues& w, int64_t truncate_size) {
  json out = json::array();
  const int64_t rows = w.shape.empty() ? 1 : w.shape[0];
  const int64_t row_size = rows > 0 ? static_cast<int64_t>(w.values.size()) / rows : 0;
  for (int64_t r = 0; r < std::min(rows, truncate_size); ++r) {
    if (w.shape.size() <= 1) {
      out.push_back(w.values[static_cast<size_t>(r)]);
      continue;
    }
    // (A tensor of more than two dimensions keeps its rows flat.)
    const auto row = w.values.begin() + r * row_size;
    out.push_back(json(std::vector<float>(row, row + row_size)));
  }
  return out;
}

// SGLang's /get_weights_by_name (RL trainers check a weight sync with it): the weight the
// checkpoint calls `name`, read between engine steps; one per replica at --dp-size > 1.
Reply handle_get_weights_by_name(ServerContext& ctx, const HttpRequest& request) {
  Result<json> o = request_json::parse_object(request.body);
  if (!o.ok()) return Reply::of(error_response(o.status()));
  std::string name;
  int64_t truncate_size = 100;
  Status s = request_json::check_fields(*o, {"name", "truncate_size"});
  if (s.ok()) s = request_json::read(*o, "name", name);
  if (s.ok() && name.empty()) s = request_json::field_error("name", "is required");
  if (s.ok()) s = request_json::read(*o, "truncate_size", truncate_size);
  if (s.ok() && truncate_size < 0) s = request_json::field_error("truncate_size", "must be >= 0");
  if (!s.ok()) return Reply::of(error_response(s));
  return under_generation_control(ctx, [&ctx, name, truncate_size] {
    if (ctx.model_engines.empty()) return Reply::of(error_response(400, "no model to read"));
    PausedInPlace paused(ctx.engine);
    json replicas = json::array();
    for (engine::ModelEngine& replica : ctx.model_engines) {
      Result<engine::WeightValues> w = engine::get_weights_by_name(replica, name);
      if (!w.ok()) return Reply::of(error_response(w.status()));
      replicas.push_back(weight_json(*w, truncate_size));
    }
    return Reply::of(json_response(replicas.size() == 1 ? replicas[0] : replicas));
  });
}

}  // namespace sgl::server
