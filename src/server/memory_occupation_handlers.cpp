// SGLang's /release_memory_occupation and /resume_memory_occupation (--enable-memory-saver), for
// RL trainers that share the GPU with the server: the weights' and the KV cache's device memory
// given back between rollouts and taken again, by tag. Generation stays paused while any is
// released (requests sent meanwhile wait in the queue); the resume of the last tag continues it,
// unless /pause_generation paused it meanwhile.
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/byte_size.h"
#include "core/logging.h"
#include "engine/model_engine.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using request_json::json_response;

constexpr const char* kWeights = "weights";
constexpr const char* kKvCache = "kv_cache";
// SGLang's CUDA graph memory pool. Here the graphs read the activations, which stay: the tag is
// taken (so a client's release and resume of it pair up) and the reply says nothing is freed.
constexpr const char* kCudaGraph = "cuda_graph";

// The request's tags: its "tags", or every tag when absent, null or empty (SGLang's default).
// `all` says which.
Result<std::set<std::string>> parse_tags(std::string_view body, bool& all) {
  SGL_ASSIGN_OR_RETURN(json o, request_json::parse_optional_object(body));
  SGL_RETURN_IF_ERROR(request_json::check_fields(o, {"tags"}));
  std::set<std::string> tags;
  if (const json* given = request_json::find(o, "tags"); given != nullptr && !given->is_null()) {
    if (!given->is_array()) {
      return request_json::field_error("tags",
                                       "must be a list of \"weights\", \"kv_cache\" and "
                                       "\"cuda_graph\"");
    }
    for (const json& tag : *given) {
      if (!tag.is_string() || (tag != kWeights && tag != kKvCache && tag != kCudaGraph)) {
        return request_json::field_error("tags", "has " + tag.dump() +
                                                     "; the tags are \"weights\", \"kv_cache\" and "
                                                     "\"cuda_graph\"");
      }
      tags.insert(tag.get<std::string>());
    }
  }
  all = tags.empty();
  if (all) tags = {kWeights, kKvCache, kCudaGraph};
  return tags;
}

runner::MemoryKinds kinds_of(const std::set<std::string>& tags) {
  return {tags.contains(kWeights), tags.contains(kKvCache)};
}

// The tags released now: the runners' kinds, and the cuda_graph tag the context keeps.
std::set<std::string> released_tags(ServerContext& ctx) {
  const runner::MemoryKinds kinds = engine::released_memory(ctx.model_engines);
  std::set<std::string> tags;
  if (kinds.weights) tags.insert(kWeights);
  if (kinds.kv_cache) tags.insert(kKvCache);
  if (ctx.released_memory.cuda_graph) tags.insert(kCudaGraph);
  return tags;
}

std::string joined(const std::set<std::string>& tags) {
  std::string out;
  for (const std::string& tag : tags) out += (out.empty() ? "" : ", ") + tag;
  return out;
}

Reply occupation_reply(const std::string& message) {
  return Reply::of(json_response({{"success", true}, {"message", message}}));
}

Reply release(ServerContext& ctx, const std::set<std::string>& tags) {
  const std::set<std::string> released = released_tags(ctx);
  for (const std::string& tag : tags) {
    if (released.contains(tag)) {
      return Reply::of(error_response(400, "\"" + tag + "\" is released already"));
    }
  }
  const bool was_paused = ctx.engine.paused();
  if (!was_paused) ctx.engine.pause_generation(engine::PauseMode::kInPlace);
  // A refusal leaves generation as it found it.
  auto refuse = [&](const HttpResponse& response) {
    if (!was_paused) ctx.engine.continue_generation();
    return Reply::of(response);
  };
  if (tags.contains(kKvCache) && !ctx.engine.flush_cache()) {
    return refuse(error_response(
        400,
        "requests are running, and their KV cache would go: let them finish, or pause "
        "with /pause_generation mode \"retract\" (they wait in the queue) or \"abort\" "
        "first"));
  }
  Result<size_t> bytes = engine::release_memory_occupation(ctx.model_engines, kinds_of(tags));
  if (!bytes.ok()) return refuse(error_response(bytes.status()));
  if (released.empty()) ctx.released_memory.paused_generation = !was_paused;
  if (tags.contains(kCudaGraph)) ctx.released_memory.cuda_graph = true;
  std::string message = "Released " + joined(tags) + ": " +
                        format_gib(static_cast<double>(*bytes)) + " of device memory";
  if (tags.contains(kCudaGraph)) message += " (the CUDA graphs' activations stay)";
  if (tags.contains(kWeights)) {
    message += ctx.info.enable_weights_cpu_backup
                   ? "; the weights are kept in host memory"
                   : "; the weights' values are gone: write them again after the resume "
                     "(/update_weights_from_disk)";
  }
  message += ". Generation is paused until every tag is resumed.";
  SGL_LOG_INFO << message;
  return occupation_reply(message);
}

Reply resume(ServerContext& ctx, std::set<std::string> tags, bool all) {
  if (all) {
    tags = released_tags(ctx);  // no tags: whatever is released
  } else {
    const std::set<std::string> released = released_tags(ctx);
    for (const std::string& tag : tags) {
      if (!released.contains(tag)) {
        return Reply::of(error_response(400, "\"" + tag + "\" is not released"));
      }
    }
  }
  // A failed resume leaves its kind released on the ranks that could not take it back.
  if (const Status s = engine::resume_memory_occupation(ctx.model_engines, kinds_of(tags));
      !s.ok()) {
    SGL_LOG_ERROR << "resume_memory_occupation: " << s.message();
    return Reply::of(error_response(s));
  }
  if (tags.contains(kCudaGraph)) ctx.released_memory.cuda_graph = false;
  std::string message = "Resumed " + (tags.empty() ? std::string("nothing") : joined(tags)) + ".";
  if (const std::set<std::string> still = released_tags(ctx); !still.empty()) {
    message += " Still released: " + joined(still) + ".";
  } else if (ctx.released_memory.paused_generation) {
    ctx.engine.continue_generation();
    ctx.released_memory.paused_generation = false;
    message += " Generation continues.";
  }
  SGL_LOG_INFO << message;
  return occupation_reply(message);
}

// Parses the request's tags and, on a server with the memory saver, answers with `apply(ctx,
// tags, all)` under the generation control.
template <typename Apply>
Reply occupation_request(ServerContext& ctx, const HttpRequest& request, Apply apply) {
  bool all = false;
  Result<std::set<std::string>> tags = parse_tags(request.body, all);
  if (!tags.ok()) return Reply::of(error_response(tags.status()));
  if (ctx.model_engines.empty() || !ctx.info.enable_memory_saver) {
    return Reply::of(
        error_response(400,
                       "the server was started without --enable-memory-saver: its memory cannot be "
                       "released"));
  }
  return under_generation_control(
      ctx, [&ctx, tags = std::move(tags).value(), all, apply] { return apply(ctx, tags, all); });
}

}  // namespace

bool memory_released(ServerContext& ctx) { return !released_tags(ctx).empty(); }

Reply handle_release_memory_occupation(ServerContext& ctx, const HttpRequest& request) {
  return occupation_request(
      ctx, request,
      [](ServerContext& c, const std::set<std::string>& tags, bool) { return release(c, tags); });
}

Reply handle_resume_memory_occupation(ServerContext& ctx, const HttpRequest& request) {
  return occupation_request(ctx, request, resume);
}

}  // namespace sgl::server
