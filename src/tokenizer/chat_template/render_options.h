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
  // Limits that turn runaway templates into errors instead of hangs, OOMs or crashes.
  size_t max_output_bytes = size_t{64} << 20;  // also bounds any single string or list value
  int max_call_depth = 200;                    // nested macro / caller / recursive loop calls
  int64_t max_loop_iterations = 10'000'000;    // total over the render
  // Native stack the render may use below its entry (blocks and expressions nested inside
  // recursive macros). NOTE: one level of plain macro recursion takes ~3 KiB in Release and
  // ~12.5 KiB under ASan (200 levels: 0.6 / 2.5 MiB), so 4 MiB admits the full call depth in
  // both and leaves half of an 8 MiB thread stack to the caller and to the bounded recursions
  // the guard does not see (tojson, 512 levels: 0.25 / 2 MiB; ==, < and hashing, 1000 levels:
  // 0.5 / 1 MiB).
  size_t max_stack_bytes = size_t{4} << 20;
  // Bytes copied, built or scanned over the whole render, plus a small charge per evaluated
  // node and call: bounds the render's time (quadratic string building, exponential macro
  // fan-out) and, since every live value was built within it, its peak memory.
  size_t max_work_bytes = size_t{1} << 30;
  // A render stops with an error once `*cancelled` is true (the client went away) or the
  // deadline has passed; checked as the render makes progress. Not owned; may be null.
  const std::atomic<bool>* cancelled = nullptr;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Local wall-clock time for strftime_now(); unset means the system clock. Only the date and
  // time fields matter (weekday and day of year are derived from them).
  std::function<std::tm()> now;
};

}  // namespace sgl::tokenizer
