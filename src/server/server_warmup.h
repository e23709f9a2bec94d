// SGLang's server warm-up: before the server listens, one request through each replica, so the
// first client's prefill does not pay a fresh process's one-time costs (on CUDA 0.1-0.15 s where
// the CUDA graphs never reach the library GEMM:
// docs/perf-log/2026-12-03-route-fold-and-boundaries.md). SGLang sends a short prompt
// ("The capital city of France is", 8 tokens out); this one is long enough for the prefill to
// take the library GEMM, which decode-sized batches never reach. Each replica's counters
// (finished requests, prompt tokens) include it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>

#include "core/status.h"
#include "engine/model_engine.h"

namespace sgl::server {

// Prompt tokens of the warm-up request: past the GEMV's 16 rows (kernels/cuda/linear.cu).
inline constexpr int64_t kWarmupPromptTokens = 256;
// How long a replica's warm-up request may take (SGLang's default warm-up timeout).
inline constexpr std::chrono::seconds kWarmupTimeout{600};

enum class WarmupEnd : uint8_t {
  kFinished,  // every replica's request finished (or had no room to run)
  kStopped,   // stop_requested() said so: the running request was aborted
};

// Runs one greedy request of min(kWarmupPromptTokens, context - 1, KV capacity - 1) prompt
// tokens and one output token through each replica's engine in turn (a replica with no room for
// a prompt is skipped, logged). `stop_requested` is polled while a request runs (every 20 ms).
// Errors name the replica and why its request failed, or that it ran past `timeout` (aborted).
// Generation models only.
Result<WarmupEnd> warm_up(std::span<engine::ModelEngine> replicas,
                          const std::function<bool()>& stop_requested,
                          std::chrono::milliseconds timeout = kWarmupTimeout);

}  // namespace sgl::server
