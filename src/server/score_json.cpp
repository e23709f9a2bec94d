// /v1/score request parsing: query and items in one form (text or ids), labels per item.
#include "server/score_json.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "server/request_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using request_json::field_error;
using request_json::find;
using request_json::read;

constexpr request_json::RefusedField kRefused[] = {
    {"embed_override_token_id", "embedding overrides are not implemented"},
    {"query_embed_overrides", "embedding overrides are not implemented"},
    {"item_embed_overrides", "embedding overrides are not implemented"},
    {"return_pooled_hidden_states",
     "pooled hidden states need a model with a task head (SequenceClassification, RewardModel); "
     "a causal LM has none"},
    {"score_extraction_token",
     "setwise scoring (a readout at every extraction token) is not "
     "implemented"},
};

// `items` as texts or id lists (a string is one item).
Status read_items(const json& o, std::vector<std::string>& texts,
                  std::vector<std::vector<int32_t>>& ids) {
  const json* items = find(o, "items");
  if (!items) return field_error("items", "must be provided");
  if (items->is_string()) {
    texts.push_back(items->get<std::string>());
    return Status::ok_status();
  }
  if (!items->is_array()) {
    return field_error("items", "must be a string, a list of strings or a list of token id lists");
  }
  for (const json& item : *items) {
    if (item.is_string() && ids.empty()) {
      texts.push_back(item.get<std::string>());
    } else if (item.is_array() && texts.empty()) {
      SGL_RETURN_IF_ERROR(request_json::to_ids(item, "items", ids.emplace_back()));
    } else {
      return field_error("items", "must be all strings or all token id lists");
    }
  }
  return Status::ok_status();
}

// label_token_ids: one list for every item, or one list per item; each nonempty, distinct ids.
Status read_labels(const json& o, size_t num_items, std::vector<std::vector<int32_t>>& out) {
  constexpr const char* kKey = "label_token_ids";
  const json* v = find(o, kKey);
  if (!v) return field_error(kKey, "is required for generation (CausalLM) models");
  if (!v->is_array() || v->empty()) return field_error(kKey, "must be a nonempty list");
  if (v->front().is_array()) {
    if (v->size() != num_items) return field_error(kKey, "must have one list per item");
    for (const json& labels : *v)
      SGL_RETURN_IF_ERROR(request_json::to_ids(labels, kKey, out.emplace_back()));
  } else {
    std::vector<int32_t> labels;
    SGL_RETURN_IF_ERROR(request_json::to_ids(*v, kKey, labels));
    out.assign(num_items, labels);
  }
  for (const std::vector<int32_t>& labels : out) {
    if (labels.empty()) return field_error(kKey, "each item must have a nonempty candidate list");
    if (std::set<int32_t>(labels.begin(), labels.end()).size() != labels.size()) {
      return field_error(kKey, "must not contain duplicate tokens");
    }
  }
  return Status::ok_status();
}

}  // namespace

Result<ScoreRequest> parse_score_request(std::string_view body) {
  SGL_ASSIGN_OR_RETURN(json o, request_json::parse_object(body));
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kRefused));
  ScoreRequest r;
  SGL_RETURN_IF_ERROR(read(o, "model", r.model));
  SGL_RETURN_IF_ERROR(read(o, "apply_softmax", r.apply_softmax));
  SGL_RETURN_IF_ERROR(read(o, "return_token_logprobs", r.return_token_logprobs));
  bool item_first = false;
  SGL_RETURN_IF_ERROR(read(o, "item_first", item_first));
  SGL_RETURN_IF_ERROR(read(o, "temperature", r.temperature));
  if (!std::isfinite(r.temperature) || r.temperature <= 0) {
    return field_error("temperature", "must be finite and greater than zero");
  }
  if (r.temperature != 1.0 && !r.apply_softmax) {
    return field_error("temperature", "requires apply_softmax=True");
  }
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> ids;
  SGL_RETURN_IF_ERROR(read_items(o, texts, ids));
  const size_t num_items = texts.size() + ids.size();
  if (num_items == 0) return r;  // nothing to score: no scores
  if (static_cast<int64_t>(num_items) > kMaxBatchPrompts) {
    return field_error("items", "may hold at most " + std::to_string(kMaxBatchPrompts) + " items");
  }
  SGL_RETURN_IF_ERROR(read_labels(o, num_items, r.label_token_ids));
  const json* query = find(o, "query");
  if (!texts.empty()) {
    if (query && !query->is_string()) {
      return field_error("query", "must be text when the items are (or token ids with theirs)");
    }
    const std::string q = query ? query->get<std::string>() : std::string();
    for (const std::string& item : texts) {
      r.sequences.push_back({true, item_first ? item + q : q + item, {}});
    }
  } else {
    std::vector<int32_t> q;
    if (query && !query->is_array()) {
      return field_error("query", "must be token ids when the items are (or text with theirs)");
    }
    if (query) SGL_RETURN_IF_ERROR(request_json::to_ids(*query, "query", q));
    for (std::vector<int32_t>& item : ids) {
      std::vector<int32_t> seq = item_first ? item : q;
      const std::vector<int32_t>& tail = item_first ? q : item;
      seq.insert(seq.end(), tail.begin(), tail.end());
      r.sequences.push_back({false, {}, std::move(seq)});
    }
  }
  return r;
}

}  // namespace sgl::server
