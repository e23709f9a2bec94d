// SGLang's sglext: the response-level extension object of an OpenAI completion or chat reply,
// holding what a request asked beyond OpenAI's fields (SGLang reports its first choice's).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <span>

#include "server/choice_stream.h"
#include "server/openai_types.h"
#include "server/server_context.h"

namespace sgl::server {

// {"routed_experts": base64 (routed_experts_json.h), "cached_tokens_details": {"device": N,
// "host": 0}, "spec_tokens_details": ...}, each where asked: the first choice's routed experts
// and cached tokens (only when the cache served some, SGLang's), and the speculative decoding of
// each choice that verified drafts (one object for a single choice, else a list). Null when
// nothing is reported.
nlohmann::ordered_json sglext_json(std::span<const std::unique_ptr<ChoiceStream>> choices,
                                   const ServerInfo& info, const SglextFields& asked);

// SGLang's per-request speculative decoding metrics, as /generate's meta_info lists them
// (spec_accept_rate, spec_accept_length, spec_num_correct_drafts, spec_num_proposed_drafts,
// spec_verify_ct, spec_correct_drafts_histogram); null for a choice that verified no drafts.
nlohmann::ordered_json spec_meta_fields(const ChoiceStream& choice);

}  // namespace sgl::server
