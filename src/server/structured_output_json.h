// NOTE: internal to src/server/*.cpp (it exposes nlohmann::ordered_json); never include it
// elsewhere. The structured-output fields of a request, as a GrammarInput: SGLang's json_schema /
// regex / ebnf, vLLM's guided_json / guided_regex / guided_grammar / guided_choice, and OpenAI's
// response_format. At most one may constrain a request (SGLang's rule); the grammar itself is
// compiled later, for the model (GrammarBackend).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "core/status.h"
#include "server/openai_types.h"

namespace sgl::server::structured_output_json {

// The sampling-level fields (top level of an OpenAI request, sampling_params of /generate).
// Sets `out` when one is present; two present is a 400.
Status read_sampling_fields(const nlohmann::ordered_json& o, std::optional<GrammarInput>& out);

// OpenAI's response_format: {"type": "text"} asks nothing; "json_object" any JSON object;
// "json_schema" with json_schema.schema the schema (json_schema.strict accepted either way: the
// output is always held to the schema). Conflicts with a sampling-level field are a 400.
Status read_response_format(const nlohmann::ordered_json& o, std::optional<GrammarInput>& out);

}  // namespace sgl::server::structured_output_json
