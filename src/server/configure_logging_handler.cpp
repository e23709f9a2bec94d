// SGLang's /configure_logging (GET or POST with a JSON body): request logging turned on or off
// (log_requests), its level and format changed (log_requests_level, log_requests_format), and the
// log level changed (log_level) while the server runs. The request dumps SGLang writes to folders
// are not built, so their fields are refused by name.
#include <nlohmann/json.hpp>

#include "core/logging.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/request_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using request_json::field_error;
using request_json::find;
using request_json::read;

constexpr const char* kNoDumps = "request dumps are not implemented";
constexpr request_json::RefusedField kRefused[] = {
    {"dump_requests_folder", kNoDumps},
    {"dump_requests_threshold", kNoDumps},
    {"dump_requests_exclude_meta_keys", kNoDumps},
    {"crash_dump_folder", "crash dumps are not implemented"},
};

}  // namespace

Reply handle_configure_logging(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = request_json::parse_object(request.body);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  const json& o = *parsed;
  if (Status s = request_json::refuse_fields(o, kRefused); !s.ok()) {
    return Reply::of(error_response(s));
  }
  std::optional<int64_t> level;
  if (Status s = read(o, "log_requests_level", level); !s.ok()) return Reply::of(error_response(s));
  std::optional<std::string_view> format;
  if (const json* v = find(o, "log_requests_format")) {
    if (!v->is_string()) {
      return Reply::of(error_response(field_error("log_requests_format", "must be a string")));
    }
    format = v->get_ref<const std::string&>();
  }
  std::optional<LogLevel> log_level;
  if (const json* v = find(o, "log_level")) {
    if (!v->is_string())
      return Reply::of(error_response(field_error("log_level", "must be a string")));
    auto parsed_level = parse_log_level(v->get<std::string>());
    if (!parsed_level.ok()) {
      return Reply::of(error_response(field_error("log_level", parsed_level.status().message())));
    }
    log_level = *parsed_level;
  }
  std::optional<bool> log_requests;
  if (const json* v = find(o, "log_requests")) {
    if (!v->is_boolean()) {
      return Reply::of(error_response(field_error("log_requests", "must be a boolean")));
    }
    log_requests = v->get<bool>();
  }
  // Checked whole before anything changes.
  if (Status s = ctx.request_log.configure(log_requests, level, format); !s.ok()) {
    return Reply::of(error_response(s));
  }
  if (log_level) set_log_level(*log_level);
  SGL_LOG_INFO << "configure_logging: " << request.body;
  return Reply::of(plain_text_response());  // an empty 200, as SGLang's
}

}  // namespace sgl::server
