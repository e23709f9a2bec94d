#include "server/server_warmup.h"

#include <algorithm>
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

Result<WarmupEnd> warm_up(std::span<engine::ModelEngine> replicas,
                          const std::function<bool()>& stop_requested,
                          std::chrono::milliseconds timeout) {
  constexpr std::chrono::milliseconds kPoll{20};
  for (size_t r = 0; r < replicas.size(); ++r) {
    engine::ModelEngine& replica = replicas[r];
    const std::string what = "warm-up request of replica " + std::to_string(r);
    const int64_t length =
        std::min({kWarmupPromptTokens, replica.model_runner->context_length() - 1,
                  replica.engine->get_stats().scheduler.kv_capacity - 1});
    if (length < 1) {
      SGL_LOG_INFO << what << ": skipped (no room for a prompt)";
      continue;
    }
    engine::GenerateRequest request;
    request.input_ids = warmup_prompt(length, replica.model_runner->config().vocab_size);
    request.max_new_tokens = 1;
    request.sampling.temperature = 0.f;
    request.ignore_eos = true;
    const auto start = std::chrono::steady_clock::now();
    auto submitted = replica.engine->submit(std::move(request));
    if (!submitted.ok()) {
      return Status(submitted.status().code(), what + ": " + submitted.status().message());
    }
    engine::RequestStream& stream = **submitted;
    for (;;) {
      if (stop_requested()) {
        replica.engine->abort(stream.rid());
        return WarmupEnd::kStopped;
      }
      if (std::chrono::steady_clock::now() - start >= timeout) {
        replica.engine->abort(stream.rid());
        return internal_error(what + " did not finish in " + std::to_string(timeout.count()) +
                              " ms (aborted)");
      }
      const std::optional<engine::StreamEvent> event = stream.next(kPoll);
      if (!event) {
        if (stream.done()) return internal_error(what + " ended without a finish");
        continue;  // nothing yet
      }
      if (!event->finished) continue;
      if (event->finished->reason == scheduler::FinishReason::kAbort) {
        return internal_error(what + " aborted: " + event->finished->message);
      }
      break;
    }
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    SGL_LOG_INFO << what << " (" << length << " prompt tokens): " << std::lround(took.count())
                 << " ms";
  }
  return WarmupEnd::kFinished;
}

}  // namespace sgl::server
