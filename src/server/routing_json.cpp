// Reading RequestRouting: rid, the replica, priority, the LoRA adapter and the cache namespace.
#include "server/routing_json.h"

#include <algorithm>
#include <string>
#include <vector>

#include "server/request_json.h"

namespace sgl::server::routing_json {
namespace {

using json = nlohmann::ordered_json;
using request_json::field_error;
using request_json::find;
using request_json::read;

// One engine namespace for SGLang's (extra_key, cache_salt) pair, unambiguous: the key's length,
// the key, then the salt; "" (the default namespace) where both are none.
std::string cache_namespace_key(const std::string& extra_key, const std::string& cache_salt) {
  if (extra_key.empty() && cache_salt.empty()) return {};
  return std::to_string(extra_key.size()) + ":" + extra_key + cache_salt;
}

// A string field given once for every prompt, or (/generate's batch, as its rid) as a list of
// one per prompt; null (the field or an item) is none. Empty: not given. `what` names a value
// ("a string"), `item` one of the list ("string").
Result<std::vector<std::optional<std::string>>> read_per_prompt(const json& o, const char* key,
                                                                std::optional<size_t> batch_prompts,
                                                                const std::string& what,
                                                                const std::string& item) {
  std::vector<std::optional<std::string>> out;
  const json* v = find(o, key);
  if (!v) return out;
  auto one = [&](const json& x) -> Status {
    if (!x.is_null() && !x.is_string()) {
      return field_error(key, "must be " + what + " or a list of one per prompt");
    }
    out.push_back(x.is_null() ? std::nullopt : std::optional(x.get<std::string>()));
    return Status::ok_status();
  };
  if (!v->is_array()) {
    SGL_RETURN_IF_ERROR(one(*v));
    return out;
  }
  if (!batch_prompts) {
    return field_error(key,
                       "as a list is not supported on this route (one value serves the whole "
                       "request)");
  }
  if (v->size() != *batch_prompts || *batch_prompts == 0) {
    return field_error(key, "as a list must hold one " + item + " per prompt of a batch");
  }
  for (const json& x : *v) SGL_RETURN_IF_ERROR(one(x));
  return out;
}

// extra_key and cache_salt, per prompt, as one engine namespace each (none where every prompt
// gives neither); "" and null are none, as SGLang reads them.
Status read_cache_namespaces(const json& o, std::optional<size_t> batch_prompts,
                             RequestRouting& out) {
  SGL_ASSIGN_OR_RETURN(const auto keys,
                       read_per_prompt(o, "extra_key", batch_prompts, "a string", "string"));
  SGL_ASSIGN_OR_RETURN(const auto salts,
                       read_per_prompt(o, "cache_salt", batch_prompts, "a string", "string"));
  auto part = [](const std::vector<std::optional<std::string>>& parts, size_t i) {
    return parts.empty() ? std::string() : parts[parts.size() == 1 ? 0 : i].value_or("");
  };
  const size_t n = std::max(keys.size(), salts.size());
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    out.cache_namespaces.push_back(cache_namespace_key(part(keys, i), part(salts, i)));
    any = any || !out.cache_namespaces.back().empty();
  }
  if (!any) out.cache_namespaces.clear();
  return Status::ok_status();
}

}  // namespace

// SGLang's rid (the request's id, which /abort_request takes and the reply's id repeats) and
// routed_dp_rank, or its older name data_parallel_rank (the controller checks the range).
Status read_routing(const json& o, std::optional<size_t> batch_prompts, RequestRouting& out) {
  if (const json* v = find(o, "rid"); v && v->is_array()) {
    if (!batch_prompts) {
      return unimplemented(
          "'rid' as a list is not supported on this route (one string names the whole "
          "request)");
    }
    if (v->size() != *batch_prompts || *batch_prompts == 0) {
      return field_error("rid", "as a list must hold one id per prompt of a batch (" +
                                    (*batch_prompts == 0 ? std::string("this request is none")
                                                         : std::to_string(*batch_prompts)) +
                                    ")");
    }
    for (const json& id : *v) {
      if (!id.is_string() || id.get_ref<const std::string&>().empty()) {
        return field_error("rid", "ids must be non-empty strings");
      }
      if (std::find(out.rids.begin(), out.rids.end(), id.get<std::string>()) != out.rids.end()) {
        return field_error("rid", "repeats '" + id.get<std::string>() + "'");
      }
      out.rids.push_back(id.get<std::string>());
    }
  } else {
    SGL_RETURN_IF_ERROR(read(o, "rid", out.rid));
  }
  for (const char* key : {"routed_dp_rank", "data_parallel_rank"}) {
    std::optional<int64_t> v;
    SGL_RETURN_IF_ERROR(read(o, key, v));
    if (!v) continue;
    if (*v < 0) return field_error(key, "must be >= 0");
    if (out.routed_dp_rank && *out.routed_dp_rank != *v) {
      return field_error(key, "and 'routed_dp_rank' name different replicas");
    }
    out.routed_dp_rank = v;
  }
  SGL_RETURN_IF_ERROR(read(o, "priority", out.priority));
  // SGLang's lora_path: an adapter's name, or one per prompt of /generate's batch.
  SGL_ASSIGN_OR_RETURN(out.lora_paths, read_per_prompt(o, "lora_path", batch_prompts,
                                                       "an adapter's name", "adapter (or null)"));
  return read_cache_namespaces(o, batch_prompts, out);
}

}  // namespace sgl::server::routing_json
