#include "server/sglext_json.h"

#include "server/routed_experts_json.h"

namespace sgl::server {

using json = nlohmann::ordered_json;

json spec_meta_fields(const ChoiceStream& choice) {
  const scheduler::SpecDecodeStats& s = choice.spec();
  if (s.verify_ct == 0 || s.proposed == 0) return nullptr;
  json out = {
      {"spec_accept_rate", static_cast<double>(s.correct) / static_cast<double>(s.proposed)},
      // Tokens a verify step yields, the one sampled after its drafts included. (SGLang divides
      // the completion tokens, every step of its being a verify; here steps a draft lookup left
      // plain do not count.)
      {"spec_accept_length",
       1.0 + static_cast<double>(s.correct) / static_cast<double>(s.verify_ct)},
      {"spec_num_correct_drafts", s.correct},
      {"spec_num_proposed_drafts", s.proposed},
      {"spec_verify_ct", s.verify_ct}};
  if (!s.correct_histogram.empty()) out["spec_correct_drafts_histogram"] = s.correct_histogram;
  return out;
}

json sglext_json(std::span<const std::unique_ptr<ChoiceStream>> choices, const ServerInfo& info,
                 const SglextFields& asked) {
  const ChoiceStream& first = *choices.front();
  json out;  // null until a field is set
  if (asked.routed_experts.asked) {
    out["routed_experts"] =
        choice_routed_experts(first, info.routed_experts, asked.routed_experts.start_len);
  }
  // Without a hierarchical cache every cached token is on the device.
  if (asked.cached_tokens_details && first.cached_tokens() > 0) {
    out["cached_tokens_details"] = {{"device", first.cached_tokens()}, {"host", 0}};
  }
  if (asked.spec_tokens_details) {
    // SGLang's SpecTokensDetails: its fields all present, those sgl.cpp has no counterpart of
    // (capped and block-accept lengths) 0.
    json details = json::array();
    for (const auto& choice : choices) {
      json fields = spec_meta_fields(*choice);
      if (fields.is_null()) continue;
      json d = {{"spec_accept_rate", fields["spec_accept_rate"]},
                {"spec_accept_length", fields["spec_accept_length"]},
                {"spec_cap_length", 0.0},
                {"spec_block_accept_length", 0.0},
                {"spec_num_correct_drafts", fields["spec_num_correct_drafts"]},
                {"spec_num_proposed_drafts", fields["spec_num_proposed_drafts"]},
                {"spec_verify_ct", fields["spec_verify_ct"]},
                {"spec_correct_drafts_histogram", choice->spec().correct_histogram},
                {"spec_cap_lens_histogram", json::array()}};
      details.push_back(std::move(d));
    }
    if (!details.empty()) {
      out["spec_tokens_details"] = choices.size() > 1 ? details : details.front();
    }
  }
  return out;
}

}  // namespace sgl::server
