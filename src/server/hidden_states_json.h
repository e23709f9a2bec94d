// SGLang's return_hidden_states in replies: a choice's rows (ChoiceDelta::hidden_states, f32
// [rows, hidden]: the prompt's positions, then one per output token fed back) in /generate's
// meta_info layout and in an OpenAI choice's hidden_states.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>

#include "core/status.h"
#include "server/choice_stream.h"
#include "server/openai_types.h"
#include "server/server_context.h"

namespace sgl::server {

// kInvalidArgument (SGLang's words) when `mode` asks for rows the server does not serve
// (--enable-return-hidden-states).
Status check_hidden_states(const ServerInfo& info, HiddenStatesMode mode);

// meta_info.hidden_states for `choice`, whose `rows` start at position `first`: kAll: the prompt
// positions' rows as one list, then a row per output token fed back (the rows past the last
// output token but one, steps after a finish the server decided, are left out); kLast: the last
// such position's row alone (null before any). `rows` are `width` values each.
nlohmann::ordered_json meta_info_hidden_states(const ChoiceStream& choice,
                                               std::span<const float> rows, int64_t first,
                                               int64_t width, HiddenStatesMode mode);

// An OpenAI choice's hidden_states (SGLang's): kAll: the row of the last output token fed back
// ([] for a one-token choice); kLast: the last position's row (the prompt's last for one token).
nlohmann::ordered_json choice_hidden_states(const ChoiceStream& choice, int64_t width,
                                            HiddenStatesMode mode);

}  // namespace sgl::server
