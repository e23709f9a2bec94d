// Priority scheduling (SGLang's --enable-priority-scheduling): a request's integer priority orders
// the waiting queue ahead of the schedule policy, lets a waiting request preempt running ones it
// outranks by more than a threshold, and decides which request a full queue turns away.
#pragma once

#include <cstdint>
#include <optional>

namespace sgl::scheduler {

struct PriorityOptions {
  bool enabled = false;           // --enable-priority-scheduling
  bool low_values_first = false;  // --schedule-low-priority-values-first (default: high first)
  bool preemption = true;         // off with --disable-priority-preemption
  // --priority-scheduling-preemption-threshold: a waiting request preempts a running one only
  // when it outranks it by more than this.
  int64_t preemption_threshold = 10;
  std::optional<int64_t> default_value;  // --default-priority-value
  bool retract_by_priority = false;      // --retraction-policy priority
  // --abort-on-priority-when-disabled: without priority scheduling a request that gives a
  // priority is aborted (as SGLang, 503) instead of the priority having no effect.
  bool abort_when_disabled = false;

  // The priority of a request that gave `given`: with none, --default-priority-value, else the
  // least preferred value (as SGLang).
  int64_t resolve(std::optional<int64_t> given) const;
  // How far priority `a` outranks `b` (> 0: a is preferred), saturated to int64's range.
  int64_t gap(int64_t a, int64_t b) const;
  bool prefers(int64_t a, int64_t b) const { return gap(a, b) > 0; }
};

}  // namespace sgl::scheduler
