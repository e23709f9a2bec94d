// RequestStream: the per-request event queue between the engine thread (producer) and one
// consumer (an HTTP handler, a CLI). Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "sampling/prompt_logprobs.h"
#include "sampling/sampler.h"
#include "scheduler/req.h"

namespace sgl::engine {

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;
  int32_t retractions = 0;  // SGLang's num_retractions
};

struct StreamEvent {
  std::vector<int32_t> token_ids;  // new tokens since the previous event
  std::vector<float> logprobs;     // per new token, when requested
  std::vector<std::vector<sampling::TokenLogprob>> top_logprobs;  // per new token, when requested
  std::optional<scheduler::FinishState> finished;                 // set on the last event only
  Usage usage;
  // Prompt logprobs (GenerateRequest::logprob_start_len), once: with the first token, or with
  // the finish of a prompt-scoring request (max_new_tokens 0).
  std::optional<sampling::PromptLogprobs> input_logprobs = {};
  // An encode request's embedding (Engine::encode), f32 [hidden], with its finish.
  std::vector<float> embedding = {};
  // Per new token, the logprobs of GenerateRequest::token_ids_logprob, when requested.
  std::vector<std::vector<float>> token_ids_logprobs = {};
  // GenerateRequest::return_hidden_states: the hidden states of the positions computed since the
  // previous event (the prompt's, then one per fed-back output token), f32 [rows, hidden].
  std::vector<float> hidden_states = {};
  // GenerateRequest::return_routed_experts: the expert ids of the same positions, i32 [rows, MoE
  // layers, top_k].
  std::vector<int32_t> routed_experts = {};
  scheduler::SpecDecodeStats spec = {};  // the request's speculative decoding so far
  // When the engine pushed this event's first and last tokens (RequestStream::push stamps them),
  // so a consumer that takes several merged steps at once still times them as produced.
  std::chrono::steady_clock::time_point first_token_time = {};
  std::chrono::steady_clock::time_point last_token_time = {};
};

class RequestStream {
 public:
  explicit RequestStream(uint64_t rid) : rid_(rid) {}
  uint64_t rid() const { return rid_; }

  // Producer side (engine thread).
  void push(StreamEvent event);

  // Consumer side: waits up to `timeout` for events and returns them all merged into one
  // (tokens concatenated, the finish and latest usage kept); nullopt on timeout or once the
  // final event has been taken.
  std::optional<StreamEvent> next(std::chrono::milliseconds timeout = std::chrono::hours(24));
  bool done() const;

  // Consumer side, for event loops that must not block: `notify` runs after every push, on the
  // producer's thread and outside the stream's lock; when events are already waiting it also
  // runs once from here. It must be quick and thread-safe (e.g. post to an executor) and must
  // not push. Replaces any previous callback; an empty function removes it.
  void set_notify(std::function<void()> notify);

 private:
  const uint64_t rid_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  // The events pushed and not yet taken, merged into one as they arrive (what next() returns).
  std::optional<StreamEvent> pending_;
  bool finished_pushed_ = false;
  bool finished_taken_ = false;
  // NOTE: shared so that push() can copy it under the lock cheaply and call it outside.
  std::shared_ptr<const std::function<void()>> notify_;
};

}  // namespace sgl::engine
