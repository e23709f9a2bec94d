// SGLang's return_routed_experts in replies: a choice's expert ids (ChoiceDelta::routed_experts,
// i32 [positions, MoE layers, top_k] from position 0) as the base64 string of /generate's
// meta_info.routed_experts and the OpenAI replies' sglext.routed_experts.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"
#include "server/choice_stream.h"
#include "server/openai_types.h"
#include "server/server_context.h"

namespace sgl::server {

// kInvalidArgument for a request asking what the server does not serve (no
// --enable-return-routed-experts), or from past its prompt (`prompt_len` tokens).
Status check_routed_experts(const ServerInfo& info, const RoutedExpertsInput& asked,
                            int64_t prompt_len);

// Base64 of the little-endian i32 values [end - start, layout.num_layers, layout.top_k] for
// positions [start, end) of `ids` (i32 [positions, MoE layers, top_k] from position 0; `end`
// clamped to those there are). The dense layers' entries are 0, as SGLang's.
std::string routed_experts_base64(std::span<const int32_t> ids, const RoutedExpertsLayout& layout,
                                  int64_t start, int64_t end);

// A choice's: positions [start_len, prompt + completion - 1), every position fed to the model
// from start_len on (the last output token never is).
std::string choice_routed_experts(const ChoiceStream& choice, const RoutedExpertsLayout& layout,
                                  int64_t start_len);

}  // namespace sgl::server
