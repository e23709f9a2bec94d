// RenderBudget: native stack, work, iteration and call-depth limits; cancellation and deadline.
#include "tokenizer/chat_template/render_budget.h"

#include <chrono>
#include <vector>

#include "tokenizer/chat_template/errors.h"

namespace sgl::tokenizer::jinja {
namespace {

uintptr_t frame_address() { return reinterpret_cast<uintptr_t>(__builtin_frame_address(0)); }

}  // namespace

Status RenderBudget::start(const void* stack_base) {
  stack_base_ = reinterpret_cast<uintptr_t>(stack_base);
  return poll();
}

Status RenderBudget::check_stack() const {
  uintptr_t here = frame_address();
  // The stack grows down on every platform we build for; the distance is taken either way.
  uintptr_t used = stack_base_ > here ? stack_base_ - here : here - stack_base_;
  if (used > options_.max_stack_bytes) {
    return limit_error("chat template exceeded the native stack limit of " +
                       std::to_string(options_.max_stack_bytes) +
                       " bytes (expressions or calls nested too deeply)");
  }
  return Status::ok_status();
}

Status RenderBudget::poll() {
  if (options_.cancelled != nullptr && options_.cancelled->load(std::memory_order_relaxed)) {
    return limit_error("chat template render cancelled");
  }
  if (options_.deadline != std::chrono::steady_clock::time_point::max() &&
      std::chrono::steady_clock::now() >= options_.deadline) {
    return limit_error("chat template render deadline exceeded");
  }
  return Status::ok_status();
}

Status RenderBudget::poll_for_work() {
  next_poll_work_ = work_ + kWorkPerPoll;
  return poll();
}

Status RenderBudget::work_error() const {
  return limit_error("chat template exceeded the work limit of " +
                     std::to_string(options_.max_work_bytes) + " bytes copied, built or scanned");
}

Status RenderBudget::check_size(size_t bytes) const {
  if (bytes > options_.max_output_bytes)
    return output_limit_error(options_.max_output_bytes, bytes);
  return Status::ok_status();
}

Status RenderBudget::allocate_values(size_t count) {
  if (count > options_.max_output_bytes / sizeof(Value)) {
    return check_size(count > SIZE_MAX / sizeof(Value) ? SIZE_MAX : count * sizeof(Value));
  }
  return allocate(count * sizeof(Value));
}

Status RenderBudget::charge_walk(const Value& v) {
  if (v.is_string()) return charge(sizeof(Value) + v.as_string().size());
  if (!v.is_sequence() && !v.is_iterator() && !v.is_dict()) return charge(sizeof(Value));
  // Iterative: the value may be nested far deeper than the native stack allows.
  std::vector<const Value*> pending = {&v};
  while (!pending.empty()) {
    const Value* x = pending.back();
    pending.pop_back();
    SGL_RETURN_IF_ERROR(charge(sizeof(Value)));
    switch (x->kind()) {
      case Kind::kString:
        SGL_RETURN_IF_ERROR(charge(x->as_string().size()));
        break;
      case Kind::kList:
      case Kind::kTuple:
      case Kind::kIterator:
        for (const Value& item : x->items()) pending.push_back(&item);
        break;
      case Kind::kDict:
        for (const auto& [key, value] : x->dict_data().entries()) {
          pending.push_back(&key);
          pending.push_back(&value);
        }
        break;
      default:
        break;
    }
  }
  return Status::ok_status();
}

Status RenderBudget::charge_sort(const Value& v) {
  size_t n = v.is_string()                        ? v.as_string().size()
             : v.is_dict()                        ? v.dict_data().size()
             : v.is_sequence() || v.is_iterator() ? v.items().size()
                                                  : 0;
  size_t before = work_;
  SGL_RETURN_IF_ERROR(charge_walk(v));
  size_t walk = work_ - before;
  for (; n > 1; n >>= 1) SGL_RETURN_IF_ERROR(charge(walk));
  return Status::ok_status();
}

Status RenderBudget::count_iterations(size_t n) {
  iterations_ += static_cast<int64_t>(n);
  if (iterations_ > options_.max_loop_iterations) {
    return limit_error("chat template exceeded the loop iteration limit of " +
                       std::to_string(options_.max_loop_iterations));
  }
  return Status::ok_status();
}

Status RenderBudget::enter_call() {
  if (call_depth_ >= options_.max_call_depth) {
    return limit_error("chat template exceeded the recursion limit of " +
                       std::to_string(options_.max_call_depth) + " nested calls");
  }
  SGL_RETURN_IF_ERROR(charge(kCallBytes));
  ++call_depth_;
  return Status::ok_status();
}

Status BudgetedString::append_repeated(std::string_view s, size_t times) {
  if (!s.empty() && times > budget_.options().max_output_bytes / s.size()) {
    return budget_.check_size(times > SIZE_MAX / s.size() ? SIZE_MAX : s.size() * times);
  }
  SGL_RETURN_IF_ERROR(grow(s.size() * times));
  out_.reserve(out_.size() + s.size() * times);
  for (size_t i = 0; i < times; ++i) out_.append(s);
  return Status::ok_status();
}

Result<std::string> BudgetedString::take() {
  SGL_RETURN_IF_ERROR(budget_.charge(uncharged_));
  uncharged_ = 0;
  return std::move(out_);
}

}  // namespace sgl::tokenizer::jinja
