// Scheduler, priority scheduling: running requests preempted for a waiting one that outranks them,
// and the waiting request a full queue turns away for a preferred newcomer.
#include <algorithm>
#include <vector>

#include "core/check.h"
#include "scheduler/scheduler.h"

namespace sgl::scheduler {

std::vector<Req*> Scheduler::preemption_victims(const Req& req, const PrefillAdder& adder) const {
  const PriorityOptions& priority = options_.priority;
  if (!priority.enabled || !priority.preemption) return {};
  std::vector<Req*> candidates;
  for (Req* r : running_) {
    if (priority.gap(req.priority, r->priority) > priority.preemption_threshold) {
      candidates.push_back(r);
    }
  }
  // Least preferred first, then the newest.
  std::sort(candidates.begin(), candidates.end(), [&](const Req* a, const Req* b) {
    if (a->priority != b->priority) return priority.prefers(b->priority, a->priority);
    return a->rid > b->rid;
  });
  // A victim's KV goes to the radix cache (evictable unless another request shares it), its
  // reservation back to the budget.
  int64_t lacking = PrefillAdder::tokens_needed(req) - adder.rem_total_tokens();
  bool slot = !adder.out_of_running_slots();
  std::vector<Req*> victims;
  for (Req* r : candidates) {
    if (lacking <= 0 && slot) break;
    victims.push_back(r);
    lacking -= static_cast<int64_t>(reserved_tokens(*r)) + r->kv_len;
    slot = true;
  }
  if (lacking > 0 || !slot) return {};
  return victims;
}

void Scheduler::preempt(std::span<Req* const> victims, PrefillAdder& adder) {
  SGL_CHECK_EQ(in_flight_batches(), 0) << "preempting requests that batches in flight still read";
  for (Req* r : victims) {
    const auto reserved = static_cast<int64_t>(reserved_tokens(*r));
    std::erase(running_, r);
    unschedule(*r);
    adder.release_running(reserved);
    ++totals_.num_preempted_total;
  }
}

bool Scheduler::evict_for_priority(int64_t priority) {
  const PriorityOptions& options = options_.priority;
  Req* victim = nullptr;
  for (Req* r : waiting_) {
    if (victim == nullptr || options.prefers(victim->priority, r->priority) ||
        (victim->priority == r->priority && r->rid > victim->rid)) {
      victim = r;
    }
  }
  if (victim == nullptr || !options.prefers(priority, victim->priority)) return false;
  finish(*victim, {FinishReason::kAbort, -1, "The request is aborted by a higher priority request.",
                   kServiceUnavailable});
  release_ready();
  return true;
}

}  // namespace sgl::scheduler
