// SGLang's /start_profile and /stop_profile (GET or POST; the start takes SGLang's ProfileReq as
// an optional JSON body): every engine replica records a timeline of its forward passes
// (engine::StepProfiler) and writes it as a Chrome trace. What SGLang's torch profiler records and
// ours cannot (kernels, memory snapshots, ROCm traces, merged multi-rank files) is refused by name.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "core/logging.h"
#include "engine/step_profiler.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using request_json::field_error;
using request_json::find;
using request_json::read;

// start_step and num_steps: SGLang's clients send integers or their decimal strings
// (bench_serving and sglang.profiler send strings).
Status read_step(const json& o, const char* key, std::optional<int64_t>& out) {
  const json* v = find(o, key);
  if (v == nullptr) return {};
  if (v->is_string()) {
    const std::string& text = v->get_ref<const std::string&>();
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || end != text.c_str() + text.size() || errno != 0) {
      return field_error(key, "must be an integer, got \"" + text + "\"");
    }
    out = n;
    return {};
  }
  return read(o, key, out);
}

Status read_strings(const json& o, const char* key, std::optional<std::vector<std::string>>& out) {
  const json* v = find(o, key);
  if (v == nullptr) return {};
  if (!v->is_array()) return field_error(key, "must be a list of strings");
  out.emplace();
  for (const json& item : *v) {
    if (!item.is_string()) return field_error(key, "must be a list of strings");
    out->push_back(item.get<std::string>());
  }
  return {};
}

// SGLang's default profile id: the time as Python's str(time.time()) prints it.
std::string time_profile_id() {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", now);
  return text;
}

std::string expand_home(std::string path) {
  const char* home = std::getenv("HOME");
  if (home != nullptr && (path == "~" || path.rfind("~/", 0) == 0)) path = home + path.substr(1);
  return path;
}

Result<engine::ProfileRequest> parse_profile_request(const json& o) {
  SGL_RETURN_IF_ERROR(request_json::check_fields(
      o, {"output_dir", "start_step", "num_steps", "activities", "profile_by_stage", "with_stack",
          "record_shapes", "profile_id", "merge_profiles", "profile_prefix", "profile_stages",
          "detailed_annotations"}));
  engine::ProfileRequest r;
  std::optional<std::string> output_dir, profile_id, profile_prefix;
  SGL_RETURN_IF_ERROR(read(o, "output_dir", output_dir));
  if (!output_dir) {
    const char* env = std::getenv("SGLANG_TORCH_PROFILER_DIR");
    output_dir = env != nullptr && *env != '\0' ? env : "/tmp";
  }
  if (output_dir->empty()) return field_error("output_dir", "must not be empty");
  r.output_dir = expand_home(*output_dir);
  SGL_RETURN_IF_ERROR(read_step(o, "start_step", r.start_step));
  SGL_RETURN_IF_ERROR(read_step(o, "num_steps", r.num_steps));

  std::optional<std::vector<std::string>> activities;
  SGL_RETURN_IF_ERROR(read_strings(o, "activities", activities));
  if (activities) {
    if (activities->empty()) {
      return field_error("activities", "is empty (CPU, GPU and CUDA_PROFILER can be recorded)");
    }
    r.record_cpu = r.record_gpu = false;
    for (const std::string& a : *activities) {
      if (a == "CPU") {
        r.record_cpu = true;
      } else if (a == "GPU") {
        r.record_gpu = true;
      } else if (a == "CUDA_PROFILER") {
        r.cuda_profiler = true;
      } else if (a == "MEM" || a == "RPD" || a == "XPU") {
        return field_error("activities",
                           a + " is not supported (torch memory snapshots, ROCm and XPU traces): "
                               "CPU, GPU and CUDA_PROFILER can be recorded");
      } else {
        return field_error("activities",
                           "unknown activity \"" + a + "\" (CPU, GPU, CUDA_PROFILER)");
      }
    }
  }
  SGL_RETURN_IF_ERROR(read(o, "profile_by_stage", r.profile_by_stage));
  std::optional<std::vector<std::string>> stages;
  SGL_RETURN_IF_ERROR(read_strings(o, "profile_stages", stages));
  if (stages) {
    if (!r.profile_by_stage) return field_error("profile_stages", "needs profile_by_stage");
    r.profile_prefill = r.profile_decode = false;
    for (const std::string& stage : *stages) {
      if (stage == "prefill") {
        r.profile_prefill = true;
      } else if (stage == "decode") {
        r.profile_decode = true;
      } else {
        return field_error("profile_stages", "unknown stage \"" + stage + "\" (prefill, decode)");
      }
    }
  }
  // The torch profiler's options for its op events (Python stacks, op input shapes): ours has no
  // ops to apply them to, and its batch events always carry their shapes.
  bool with_stack = false, record_shapes = false, detailed_annotations = false;
  SGL_RETURN_IF_ERROR(read(o, "with_stack", with_stack));
  SGL_RETURN_IF_ERROR(read(o, "record_shapes", record_shapes));
  // The batches' aggregates (requests, tokens, cached tokens, queues): always in the trace.
  SGL_RETURN_IF_ERROR(read(o, "detailed_annotations", detailed_annotations));
  bool merge_profiles = false;
  SGL_RETURN_IF_ERROR(read(o, "merge_profiles", merge_profiles));
  if (merge_profiles) {
    return field_error("merge_profiles",
                       "true is not supported: each engine replica writes its own trace");
  }
  SGL_RETURN_IF_ERROR(read(o, "profile_id", profile_id));
  r.profile_id = profile_id && !profile_id->empty() ? *profile_id : time_profile_id();
  SGL_RETURN_IF_ERROR(read(o, "profile_prefix", profile_prefix));
  r.profile_prefix = profile_prefix.value_or("");
  for (const std::string* part : {&r.profile_id, &r.profile_prefix}) {
    if (part->find('/') != std::string::npos) {
      return field_error(part == &r.profile_id ? "profile_id" : "profile_prefix",
                         "must not contain '/' (it is part of a file name)");
    }
  }
  return r;
}

}  // namespace

Reply handle_start_profile(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = request_json::parse_optional_object(request.body);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  auto profile = parse_profile_request(*parsed);
  if (!profile.ok()) return Reply::of(error_response(profile.status()));
  // The engine loops answer between steps: on the admin pool, never on an I/O thread.
  return on_admin_pool(ctx, [&ctx, profile = std::move(*profile)] {
    if (Status s = ctx.engine.start_profile(profile); !s.ok()) return Reply::of(error_response(s));
    return Reply::of(plain_text_response("Start profiling.\n"));
  });
}

Reply handle_stop_profile(ServerContext& ctx, const HttpRequest& request) {
  // SGLang's stop takes no fields (bench_serving sends {}).
  auto parsed = request_json::parse_optional_object(request.body);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  if (Status s = request_json::check_fields(*parsed, {}); !s.ok()) {
    return Reply::of(error_response(s));
  }
  // Answered once the traces are written (after the recorded passes still in flight).
  return on_admin_pool(ctx, [&ctx] {
    if (Status s = ctx.engine.stop_profile(); !s.ok()) return Reply::of(error_response(s));
    return Reply::of(plain_text_response("Stop profiling. This will take some time.\n"));
  });
}

}  // namespace sgl::server
