// Options and limits for rendering a chat template.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>

namespace sgl::tokenizer {

struct RenderOptions {
  // transformers renders in jinja2's ImmutableSandboxedEnvironment: list/dict mutators
  // (append, pop, update, ...) raise SecurityError. false allows them (plain Environment).
  bool immutable_sandbox = true;
  // Limits that turn runaway templates into errors instead of hangs or OOMs.
  size_t max_output_bytes = size_t{64} << 20;  // also bounds any single string value
  int max_call_depth = 200;                    // nested macro / caller / recursive loop calls
  int64_t max_loop_iterations = 10'000'000;    // total over the render
  // A render stops with an error once `*cancelled` is true (the client went away) or the
  // deadline has passed; checked as the render makes progress. Not owned; may be null.
  const std::atomic<bool>* cancelled = nullptr;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Local wall-clock time for strftime_now(); unset means the system clock. Only the date and
  // time fields matter (weekday and day of year are derived from them).
  std::function<std::tm()> now;
};

}  // namespace sgl::tokenizer
