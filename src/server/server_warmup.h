// SGLang's server warm-up: before the server listens, one request through each replica, so the
// first client's prefill does not pay a fresh process's one-time costs (on CUDA 0.09-0.15 s
// where the CUDA graphs never reach the library GEMM:
// docs/perf-log/2026-12-03-route-fold-and-boundaries.md).
#pragma once

#include <span>

#include "core/status.h"
#include "engine/model_engine.h"

namespace sgl::server {

// Prompt tokens of the warm-up request: past the GEMV's 16 rows, so the prefill takes the
// library GEMM that only prefills reach, as SGLang's warm-up prompt does with its own kernels.
inline constexpr int kWarmupPromptTokens = 256;

// Runs one greedy request of min(kWarmupPromptTokens, context - 1) tokens and one output token
// through each replica's engine, in turn; an error names the replica and why its request failed.
// Generation models only.
Status warm_up(std::span<engine::ModelEngine> replicas);

}  // namespace sgl::server
