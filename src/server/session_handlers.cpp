// SGLang's /open_session and /close_session (GET or POST with a JSON body): sessions whose turns
// /generate's session_params continue (session_store.h).
#include <nlohmann/json.hpp>

#include "server/engine_request.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/request_json.h"

namespace sgl::server {

using json = nlohmann::ordered_json;
using request_json::field_error;
using request_json::find;
using request_json::read;

namespace {

// SGLang's OpenSessionReqInput.
struct OpenSession {
  std::string session_id;  // empty: a fresh one
  std::optional<double> timeout_s;
};

Result<OpenSession> parse_open_session(std::string_view body) {
  SGL_ASSIGN_OR_RETURN(json o, request_json::parse_object(body));
  OpenSession r;
  // Required, as SGLang's; no effect (its sessions keep every token too).
  std::optional<int64_t> capacity;
  SGL_RETURN_IF_ERROR(read(o, "capacity_of_str_len", capacity));
  if (!capacity) return field_error("capacity_of_str_len", "is required");
  SGL_RETURN_IF_ERROR(read(o, "session_id", r.session_id));
  if (const json* streaming = find(o, "streaming"); streaming && *streaming != false) {
    return unimplemented(
        "'streaming' sessions are not implemented (SGLang's need --enable-streaming-session)");
  }
  if (find(o, "timeout") != nullptr) {
    double t = 0;
    SGL_RETURN_IF_ERROR(read(o, "timeout", t));
    if (!(t > 0)) return field_error("timeout", "must be a positive number of seconds");
    r.timeout_s = t;
  }
  return r;
}

}  // namespace

Reply handle_open_session(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_open_session(request.body);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  const std::string id = parsed->session_id.empty() ? make_request_id("") : parsed->session_id;
  if (Status s = ctx.sessions.open(id, parsed->timeout_s); !s.ok()) {
    return Reply::of(error_response(s));
  }
  return Reply::of(request_json::json_response(json(id)));  // the id as a JSON string, as SGLang
}

Reply handle_close_session(ServerContext& ctx, const HttpRequest& request) {
  auto o = request_json::parse_object(request.body);
  if (!o.ok()) return Reply::of(error_response(o.status()));
  std::string id;
  if (Status s = read(*o, "session_id", id); !s.ok()) return Reply::of(error_response(s));
  if (id.empty()) return Reply::of(error_response(field_error("session_id", "is required")));
  ctx.sessions.close(id);
  return Reply::of(plain_text_response());  // an empty 200, as SGLang's
}

}  // namespace sgl::server
