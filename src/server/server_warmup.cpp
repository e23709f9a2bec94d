#include "server/server_warmup.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "core/logging.h"

namespace sgl::server {
namespace {

// Ids spread over the vocabulary (no special meaning needed: the output is dropped).
std::vector<int32_t> warmup_prompt(int64_t length, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) ids[i] = static_cast<int32_t>((7919 * i + 11) % vocab);
  return ids;
}

}  // namespace

Status warm_up(std::span<engine::ModelEngine> replicas) {
  for (size_t r = 0; r < replicas.size(); ++r) {
    const engine::ModelEngine& replica = replicas[r];
    const int64_t context = replica.model_runner->context_length();
    engine::GenerateRequest request;
    request.input_ids = warmup_prompt(std::min<int64_t>(kWarmupPromptTokens, context - 1),
                                      replica.model_runner->config().vocab_size);
    request.max_new_tokens = 1;
    request.sampling.temperature = 0.f;
    request.ignore_eos = true;
    const std::string what = "warm-up request of replica " + std::to_string(r);
    const auto start = std::chrono::steady_clock::now();
    auto stream = replica.engine->submit(std::move(request));
    if (!stream.ok())
      return Status(stream.status().code(), what + ": " + stream.status().message());
    while (auto event = (*stream)->next()) {
      if (!event->finished) continue;
      if (event->finished->reason == scheduler::FinishReason::kAbort) {
        return internal_error(what + " aborted: " + event->finished->message);
      }
      break;
    }
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    SGL_LOG_INFO << what << " (" << kWarmupPromptTokens
                 << " prompt tokens at most): " << std::lround(took.count()) << " ms";
  }
  return Status::ok_status();
}

}  // namespace sgl::server
