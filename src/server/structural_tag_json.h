// NOTE: internal to src/server/*.cpp (it exposes nlohmann::ordered_json); never include it
// elsewhere. SGLang's structural_tag (response_format, or /generate's
// sampling_params.structural_tag) read into the grammar engine's structural tag and returned as
// EBNF for the GrammarBackend.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace sgl::server {

// `value`: the tag object, or its JSON text (as /generate takes it). Both of SGLang's forms:
// {"format": {...}} (xgrammar's format tree) and {"structures": [{"begin", "schema", "end"}],
// "triggers": [...], "at_least_one"}. Every key is read or refused: a 400 naming `field` and
// the key's place. Formats the engine does not build (qwen_xml_parameter, ...) are refused by
// name.
Result<std::string> structural_tag_ebnf(const nlohmann::ordered_json& value,
                                        const std::string& field);

}  // namespace sgl::server
