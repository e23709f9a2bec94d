// RenderBudget: one render's limits (RenderOptions) and what it has used of them so far.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/chat_template/render_options.h"
#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

// Owned by the Interpreter; filters, methods and globals reach it through interp.budget().
// Sizes are checked before anything is built, so a limit error never follows a huge allocation.
// Every limit error is kResourceExhausted and names the limit and its value.
class RenderBudget {
 public:
  // Work charged for each statement, expression node or call: the Value each one produces.
  static constexpr size_t kStepBytes = 32;
  // Extra work for a macro or recursive-loop call (its scope, arguments and output buffer).
  static constexpr size_t kCallBytes = 512;
  // Extra work for a loop iteration: its scope and loop object. They are freed as the iteration
  // ends, so the charge bounds time (as the deadline does), not memory: about 2M iterations fit
  // the default budget, jinja2's work for a few seconds. Shipped templates scan the messages
  // quadratically (Command-R7B: 1M iterations for 1000 messages; Gemma-4, DeepSeek-V3.2: 0.5M).
  static constexpr size_t kIterationBytes = 256;
  // A string value's own allocations besides its characters (Value, control block, string).
  static constexpr size_t kStringValueBytes = sizeof(Value) + 64;

  explicit RenderBudget(const RenderOptions& options) : options_(options) {}

  const RenderOptions& options() const { return options_; }

  // Starts the render: stack use is measured from `stack_base` (an address in the frame that
  // calls into the interpreter); fails at once when already cancelled or past the deadline.
  Status start(const void* stack_base);

  // One unit of progress (a statement, an expression node, a call): checks the native stack,
  // charges kStepBytes and polls cancellation and the deadline every kStepsPerPoll steps.
  Status step() {
    SGL_RETURN_IF_ERROR(check_stack());
    if (++steps_ % kStepsPerPoll == 0) SGL_RETURN_IF_ERROR(poll());
    return charge(kStepBytes);
  }
  Status check_stack() const;

  // `bytes` of work: copied, scanned or built.
  Status charge(size_t bytes) {
    if (bytes > options_.max_work_bytes - work_) return work_error();
    work_ += bytes;
    if (work_ >= next_poll_work_) return poll_for_work();
    return Status::ok_status();
  }
  // A string or collection of `bytes` is about to be built: checks the single-value limit
  // (max_output_bytes), then charges the bytes as work.
  Status allocate(size_t bytes) {
    SGL_RETURN_IF_ERROR(check_size(bytes));
    return charge(bytes);
  }
  // The single-value limit alone, for sizes computed before anything is built.
  Status check_size(size_t bytes) const;
  // Builds a list of `count` values: `count * sizeof(Value)` bytes, without overflow.
  Status allocate_values(size_t count);
  // A string of `bytes` is about to join a list that holds `count` strings (split, splitlines,
  // characters of a string): checks the list's size and charges the new string.
  Status allocate_string_item(size_t count, size_t bytes) {
    SGL_RETURN_IF_ERROR(check_size((count + 1) * sizeof(Value)));
    return charge(kStringValueBytes + bytes);
  }
  // Charges walking `v` deeply (==, in, sort, hashing, dedup): every node and string byte it
  // reaches, shared parts once per appearance. Stops early once over the limit, so a value
  // shared exponentially ([x, x] nested 60 times) costs no more than the budget left.
  Status charge_walk(const Value& v);
  // Sorting the items of `v`: about log2(n) walks of it.
  Status charge_sort(const Value& v);

  Status count_iterations(size_t n);
  Status enter_call();
  void leave_call() { --call_depth_; }

  size_t work_bytes() const { return work_; }

 private:
  static constexpr uint32_t kStepsPerPoll = 1024;
  static constexpr size_t kWorkPerPoll = size_t{4} << 20;

  Status poll();
  Status poll_for_work();
  Status work_error() const;

  const RenderOptions& options_;
  uintptr_t stack_base_ = 0;
  size_t work_ = 0;
  size_t next_poll_work_ = kWorkPerPoll;
  uint32_t steps_ = 0;
  int64_t iterations_ = 0;
  int call_depth_ = 0;
};

// A string built under a render budget: every append is checked against the single-value
// limit before it happens and charged as work (in batches, to keep appends cheap).
class BudgetedString {
 public:
  explicit BudgetedString(RenderBudget& budget) : budget_(budget) {}

  Status append(std::string_view s) {
    SGL_RETURN_IF_ERROR(grow(s.size()));
    out_.append(s);
    return Status::ok_status();
  }
  Status append(size_t count, char c) {
    SGL_RETURN_IF_ERROR(grow(count));
    out_.append(count, c);
    return Status::ok_status();
  }
  Status push_back(char c) { return append(1, c); }
  // `s` `times` times, checked as a whole before any of it is appended.
  Status append_repeated(std::string_view s, size_t times);

  size_t size() const { return out_.size(); }
  // The string; charges what is still uncharged.
  Result<std::string> take();

 private:
  static constexpr size_t kChargeBatch = size_t{64} << 10;

  Status grow(size_t n) {
    if (n > budget_.options().max_output_bytes - out_.size()) {
      return budget_.check_size(n > SIZE_MAX - out_.size() ? SIZE_MAX : out_.size() + n);
    }
    uncharged_ += n;
    if (uncharged_ < kChargeBatch) return Status::ok_status();
    size_t bytes = uncharged_;
    uncharged_ = 0;
    return budget_.charge(bytes);
  }

  RenderBudget& budget_;
  std::string out_;
  size_t uncharged_ = 0;
};

}  // namespace sgl::tokenizer::jinja
