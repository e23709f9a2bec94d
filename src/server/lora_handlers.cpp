// SGLang's /load_lora_adapter and /unload_lora_adapter: LoRA adapters loaded and unloaded while
// the server runs, on every replica. A load past --max-loaded-loras unloads the least recently
// used adapter not pinned first; an unload waits for the requests running with the adapter
// while refusing new ones. One at a time with the other generation-control routes.
#include <nlohmann/json.hpp>

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

// SGLang's LoRAUpdateOutput: whether it worked, why not, and the adapters served after it.
Reply lora_update_reply(ServerContext& ctx, const Status& status) {
  json loaded = json::object();
  for (const model::LoraAdapterPath& a : ctx.lora.adapters()) loaded[a.name] = a.path;
  return Reply::of(json_response({{"success", status.ok()},
                                  {"error_message", status.ok() ? "" : status.message()},
                                  {"loaded_adapters", std::move(loaded)}},
                                 status.ok() ? 200 : 400));
}

// Unloads `name` once no request runs with it (ctx.generation_control held).
Status unload(ServerContext& ctx, const std::string& name) {
  SGL_ASSIGN_OR_RETURN(const int32_t id, ctx.lora.begin_unload(name));
  // Paused requests would hold it forever, and /continue_generation waits behind this route.
  if (!ctx.lora.wait_unused(id, [&ctx] { return ctx.engine.paused(); })) {
    return invalid_argument("requests running with LoRA adapter '" + name +
                            "' are paused (/pause_generation): continue generation, then "
                            "unload it");
  }
  {
    PausedInPlace paused(ctx.engine);
    engine::unload_lora_adapter(ctx.model_engines, id);
  }
  ctx.lora.finish_unload(id);
  SGL_LOG_INFO << "unloaded LoRA adapter '" << name << "' (id " << id << ")";
  return Status::ok_status();
}

Status load(ServerContext& ctx, const model::LoraAdapterPath& adapter) {
  if (ctx.model_engines.empty()) return invalid_argument("no model to load a LoRA adapter into");
  SGL_ASSIGN_OR_RETURN(const std::optional<std::string> evicted, ctx.lora.eviction_for_load());
  if (evicted) {
    SGL_LOG_INFO << "unloading the least recently used LoRA adapter '" << *evicted
                 << "' (--max-loaded-loras) to load '" << adapter.name << "'";
    SGL_RETURN_IF_ERROR(unload(ctx, *evicted));
  }
  SGL_ASSIGN_OR_RETURN(const LoraRegistry::Reservation slot, ctx.lora.reserve(adapter));
  Status loaded;
  {
    PausedInPlace paused(ctx.engine);
    loaded = engine::load_lora_adapter(ctx.model_engines, slot.id, adapter, slot.key);
  }
  if (!loaded.ok()) {
    ctx.lora.cancel(slot.id);
    return loaded;
  }
  ctx.lora.commit(slot.id);
  SGL_LOG_INFO << "loaded LoRA adapter '" << adapter.name << "' from " << adapter.path << " (id "
               << slot.id << ")";
  return Status::ok_status();
}

Status read_name(const json& o, std::string& name) {
  SGL_RETURN_IF_ERROR(request_json::read(o, "lora_name", name));
  if (name.empty()) return request_json::field_error("lora_name", "is required");
  return Status::ok_status();
}

}  // namespace

Reply handle_load_lora_adapter(ServerContext& ctx, const HttpRequest& request) {
  Result<json> o = request_json::parse_object(request.body);
  if (!o.ok()) return Reply::of(error_response(o.status()));
  model::LoraAdapterPath adapter;
  Status s = request_json::check_fields(*o, {"lora_name", "lora_path", "pinned"});
  if (s.ok()) s = read_name(*o, adapter.name);
  if (s.ok()) s = request_json::read(*o, "lora_path", adapter.path);
  if (s.ok() && adapter.path.empty()) s = request_json::field_error("lora_path", "is required");
  if (s.ok()) s = request_json::read(*o, "pinned", adapter.pinned);
  if (!s.ok()) return Reply::of(error_response(s));
  return under_generation_control(ctx, [&ctx, adapter = std::move(adapter)] {
    return lora_update_reply(ctx, load(ctx, adapter));
  });
}

Reply handle_unload_lora_adapter(ServerContext& ctx, const HttpRequest& request) {
  Result<json> o = request_json::parse_object(request.body);
  if (!o.ok()) return Reply::of(error_response(o.status()));
  std::string name;
  Status s = request_json::check_fields(*o, {"lora_name"});
  if (s.ok()) s = read_name(*o, name);
  if (!s.ok()) return Reply::of(error_response(s));
  return under_generation_control(
      ctx, [&ctx, name = std::move(name)] { return lora_update_reply(ctx, unload(ctx, name)); });
}

}  // namespace sgl::server
