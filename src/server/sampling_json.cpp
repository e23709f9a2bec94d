// The sampling fields' readers (sampling_json.h).
#include "server/sampling_json.h"

#include <algorithm>
#include <iterator>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "server/request_json.h"
#include "server/structured_output_json.h"
#include "tokenizer/stop_regex_matcher.h"

namespace sgl::server::sampling_json {
namespace {

using json = nlohmann::ordered_json;
using request_json::check_range;
using request_json::field_error;
using request_json::find;
using request_json::LimitedField;
using request_json::read;
using request_json::to_ids;

// Longest stop string (matching holds back text up to a stop string's length).
constexpr size_t kMaxStopBytes = 1024;
// Longest stop_token_ids list: each generated token is looked up in it on the engine thread.
constexpr size_t kMaxStopTokenIds = 1024;

// Request fields that SGLang or vLLM define and sgl.cpp does not implement yet, with the
// missing feature: each is refused (400 naming it) unless its value asks for nothing (null,
// false, "", [] or {}), never accepted and ignored.
constexpr request_json::RefusedField kUnsupportedSampling[] = {
    {"structured_outputs",
     "vLLM's structured_outputs object is not implemented (use guided_json, guided_regex, "
     "guided_choice or guided_grammar)"},
    {"custom_params", "custom logit processors are not implemented"},
    {"custom_logit_processor", "custom logit processors are not implemented"},
};

// SGLang sampling parameters with one honoured value.
const LimitedField kLimitedSampling[] = {
    {"stream_interval", {"1"}, "each token is streamed as it is decoded (stream_interval 1)"},
};

// token_ids_logprob is a top-level /generate field (SGLang's GenerateReqInput); SGLang's OpenAI
// schemas lack it (pydantic drops it unread), so there and in sampling_params it is refused.
constexpr request_json::RefusedField kTokenIdsLogprobInSampling[] = {
    {"token_ids_logprob",
     "it is a top-level /generate field (beside return_logprob), not a sampling parameter"}};
constexpr request_json::RefusedField kTokenIdsLogprobOnOpenAi[] = {
    {"token_ids_logprob",
     "logprobs of requested token ids are a /generate field (token_ids_logprob with "
     "return_logprob); SGLang's OpenAI routes do not return them"}};

// The keys /generate's sampling_params may hold: SGLang's SamplingParams fields that
// read_sampling reads or refuses by name, and the vLLM-style guided_* names it also takes. SGLang
// raises on any other key, so sgl.cpp answers 400 instead of ignoring it. `top_level`: a field
// of GenerateReqInput as well, which /generate's top level may hold.
struct SamplingParamsKey {
  const char* name;
  bool top_level = false;
};
constexpr SamplingParamsKey kSamplingParamsKeys[] = {
    {"max_new_tokens"},
    {"min_new_tokens"},
    {"temperature"},
    {"top_p"},
    {"top_k"},
    {"min_p"},
    {"seed"},
    {"sampling_seed"},
    {"stop"},
    {"stop_regex"},
    {"stop_token_ids"},
    {"no_stop_trim"},
    {"ignore_eos"},
    {"skip_special_tokens"},
    {"spaces_between_special_tokens"},
    {"n"},
    {"presence_penalty"},
    {"frequency_penalty"},
    {"repetition_penalty"},
    {"logit_bias"},
    {"json_schema"},
    {"regex"},
    {"ebnf"},
    {"guided_json"},
    {"guided_regex"},
    {"guided_grammar"},
    {"guided_choice"},
    {"structural_tag"},
    {"structured_outputs"},
    {"custom_params"},
    {"custom_logit_processor", true},  // refused by kUnsupportedSampling when it asks for any
    {"stream_interval"},
    {"token_ids_logprob", true},
};

// sampling_params holds only SamplingParams' keys.
Status check_sampling_params_keys(const json& params) {
  for (const auto& item : params.items()) {
    const std::string& key = item.key();
    if (std::none_of(std::begin(kSamplingParamsKeys), std::end(kSamplingParamsKeys),
                     [&](const SamplingParamsKey& k) { return key == k.name; })) {
      return field_error("sampling_params", "has no field '" + key + "'");
    }
  }
  return Status::ok_status();
}

}  // namespace

// /generate reads the sampling fields inside sampling_params only (SGLang's GenerateReqInput
// has no such top-level fields and drops them); at its top level each is refused, whatever its
// value but null, never ignored.
Status read_stop(const json& o, const char* key, std::vector<std::string>& out) {
  const json* v = find(o, key);
  if (!v) return Status::ok_status();
  auto add = [&](const json& e) {
    if (!e.is_string()) return field_error(key, "must be a string or a list of strings");
    const std::string& s = e.get_ref<const std::string&>();
    if (s.size() > kMaxStopBytes) {
      return field_error(key,
                         "strings may be at most " + std::to_string(kMaxStopBytes) + " bytes long");
    }
    if (!s.empty()) out.push_back(s);
    return Status::ok_status();
  };
  if (!v->is_array()) return add(*v);
  if (v->size() > 64) return field_error(key, "may hold at most 64 strings");
  for (const json& e : *v) SGL_RETURN_IF_ERROR(add(e));
  return Status::ok_status();
}

Status refuse_top_level_sampling(const json& o) {
  // OpenAI's names, which a client moving between routes sends here: /generate has its own.
  static constexpr std::pair<const char*, const char*> kOpenAiNames[] = {
      {"max_tokens", "sampling_params.max_new_tokens"},
      {"max_completion_tokens", "sampling_params.max_new_tokens"},
      {"min_tokens", "sampling_params.min_new_tokens"},
      {"logprobs", "return_logprob"},
      {"top_logprobs", "top_logprobs_num"},
  };
  for (const auto& [name, own] : kOpenAiNames) {
    if (find(o, name) != nullptr) {
      return invalid_argument("'" + std::string(name) + "' is an OpenAI field; /generate takes '" +
                              own + "'");
    }
  }
  for (const SamplingParamsKey& key : kSamplingParamsKeys) {
    if (!key.top_level && find(o, key.name) != nullptr) {
      return unimplemented("'" + std::string(key.name) +
                           "' is not supported: it belongs inside sampling_params, not at the "
                           "top level of /generate");
    }
  }
  return Status::ok_status();
}

// Sampling fields at the top level (OpenAI) or inside sampling_params (SGLang).
Status read_sampling(const json& o, SamplingInput& s, bool native) {
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kUnsupportedSampling));
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(
      o, native ? std::span(kTokenIdsLogprobInSampling) : std::span(kTokenIdsLogprobOnOpenAi)));
  SGL_RETURN_IF_ERROR(reject_limited(o, kLimitedSampling));
  // SGLang passes it to HF's decode, which fast tokenizers (every tokenizer.json) ignore; so
  // does sgl.cpp: checked, no effect.
  bool spaces_between_special_tokens = true;
  SGL_RETURN_IF_ERROR(read(o, "spaces_between_special_tokens", spaces_between_special_tokens));
  SGL_RETURN_IF_ERROR(read(o, "temperature", s.temperature));
  SGL_RETURN_IF_ERROR(read(o, "top_p", s.top_p));
  SGL_RETURN_IF_ERROR(read(o, "top_k", s.top_k));
  SGL_RETURN_IF_ERROR(read(o, "min_p", s.min_p));
  SGL_RETURN_IF_ERROR(read(o, "seed", s.seed));
  if (native && find(o, "sampling_seed") != nullptr) {
    if (find(o, "seed") != nullptr)
      return field_error("sampling_seed", "and 'seed' name the same seed: give one");
    SGL_RETURN_IF_ERROR(read(o, "sampling_seed", s.seed));
  }
  SGL_RETURN_IF_ERROR(read_stop(o, "stop", s.stop));
  SGL_RETURN_IF_ERROR(read_stop(o, "stop_regex", s.stop_regex));
  if (auto compiled = tokenizer::StopRegexMatcher::compile(s.stop_regex); !compiled.ok()) {
    return field_error("stop_regex", compiled.status().message());
  }
  SGL_RETURN_IF_ERROR(read(o, "no_stop_trim", s.no_stop_trim));
  SGL_RETURN_IF_ERROR(structured_output_json::read_sampling_fields(o, s.grammar));
  if (const json* ids = find(o, "stop_token_ids")) {
    if (ids->is_array() && ids->size() > kMaxStopTokenIds) {
      return field_error("stop_token_ids", "may list at most " + std::to_string(kMaxStopTokenIds) +
                                               " token ids, got " + std::to_string(ids->size()));
    }
    SGL_RETURN_IF_ERROR(to_ids(*ids, "stop_token_ids", s.stop_token_ids));
  }
  SGL_RETURN_IF_ERROR(read(o, "ignore_eos", s.ignore_eos));
  SGL_RETURN_IF_ERROR(read(o, "skip_special_tokens", s.skip_special_tokens));
  SGL_RETURN_IF_ERROR(read(o, "n", s.n));
  SGL_RETURN_IF_ERROR(read(o, "presence_penalty", s.presence_penalty));
  SGL_RETURN_IF_ERROR(read(o, "frequency_penalty", s.frequency_penalty));
  SGL_RETURN_IF_ERROR(read(o, "repetition_penalty", s.repetition_penalty));
  SGL_RETURN_IF_ERROR(read(o, native ? "min_new_tokens" : "min_tokens", s.min_tokens));
  if (native) {
    SGL_RETURN_IF_ERROR(read(o, "max_new_tokens", s.max_tokens));
    s.max_tokens_field = "max_new_tokens";
    const auto given = o.find("max_new_tokens");
    if (given != o.end() && given->is_null()) s.max_tokens_unbounded = true;
  }

  if (s.temperature < 0) return field_error("temperature", "must be >= 0");
  if (!(s.top_p > 0 && s.top_p <= 1)) return field_error("top_p", "must be in (0, 1]");
  if (s.top_k < -1) return field_error("top_k", "must be -1 (disabled), 0 or >= 1");
  SGL_RETURN_IF_ERROR(check_range("min_p", s.min_p, 0, 1));
  if (s.n < 1 || s.n > kMaxChoices) {
    return field_error("n", "must be in [1, " + std::to_string(kMaxChoices) + "]");
  }
  SGL_RETURN_IF_ERROR(check_range("presence_penalty", s.presence_penalty, -2, 2));
  SGL_RETURN_IF_ERROR(check_range("frequency_penalty", s.frequency_penalty, -2, 2));
  if (!(s.repetition_penalty > 0 && s.repetition_penalty <= 2)) {
    return field_error("repetition_penalty", "must be in (0, 2]");
  }
  if (s.min_tokens < 0)
    return field_error(native ? "min_new_tokens" : "min_tokens", "must be >= 0");
  if (const json* bias = find(o, "logit_bias")) {
    if (!bias->is_object()) return field_error("logit_bias", "must map token ids to numbers");
    for (const auto& [token, value] : bias->items()) {
      if (token.empty() || token.find_first_not_of("0123456789") != std::string::npos ||
          token.size() > 9) {
        return field_error("logit_bias", "keys must be token ids, got '" + token + "'");
      }
      if (!value.is_number()) return field_error("logit_bias", "values must be numbers");
      const double b = value.get<double>();
      SGL_RETURN_IF_ERROR(check_range("logit_bias", b, -100, 100));
      if (b != 0) s.logit_bias.emplace_back(std::stoll(token), b);
    }
  }
  return Status::ok_status();
}

// min_tokens may not exceed max_tokens (SGLang: min_new_tokens in [0, max_new_tokens]), the
// default one included.
Status check_min_tokens(const SamplingInput& s, bool native) {
  const std::optional<int64_t> max_tokens =
      s.max_tokens             ? s.max_tokens
      : s.max_tokens_unbounded ? std::nullopt
      : s.default_max_tokens   ? s.default_max_tokens
      : native                 ? std::optional<int64_t>(kGenerateDefaultMaxNewTokens)
                               : std::nullopt;
  if (max_tokens && s.min_tokens > *max_tokens) {
    return field_error(native ? "min_new_tokens" : "min_tokens",
                       "must be <= " + std::string(s.max_tokens_field) + " (" +
                           std::to_string(*max_tokens) + "), got " + std::to_string(s.min_tokens));
  }
  return Status::ok_status();
}

Status read_max_tokens(const json& o, const char* key, SamplingInput& s) {
  if (find(o, key) == nullptr) return Status::ok_status();
  SGL_RETURN_IF_ERROR(read(o, key, s.max_tokens));
  if (s.max_tokens && *s.max_tokens < 0) return field_error(key, "must be >= 0");
  s.max_tokens_field = key;
  return Status::ok_status();
}

Status read_sampling_params(const json& params, SamplingInput& s) {
  SGL_RETURN_IF_ERROR(read_sampling(params, s, true));
  SGL_RETURN_IF_ERROR(check_sampling_params_keys(params));
  if (s.max_tokens && *s.max_tokens < 0) return field_error("max_new_tokens", "must be >= 0");
  return check_min_tokens(s, true);
}

Status refuse_unsupported_sampling(const json& o) {
  return request_json::refuse_fields(o, kUnsupportedSampling);
}

}  // namespace sgl::server::sampling_json
