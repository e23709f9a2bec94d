// Orders the waiting queue by the --schedule-policy (SGLang's SchedulePolicy.calc_priority).
#pragma once

#include <deque>
#include <random>

#include "cache/radix_cache.h"
#include "scheduler/req.h"
#include "scheduler/scheduler_options.h"

namespace sgl::scheduler {

// Reorders `waiting` in place. Prefix-aware policies (lpm, dfs-weight) match every waiting
// request against `tree` first, which may split tree nodes but changes no cached content. With
// priority scheduling (fcfs and lof only) the preferred priorities come first, each in the
// policy's order. Returns the policy actually applied (lpm falls back to fcfs on long queues).
SchedulePolicy sort_waiting_queue(SchedulePolicy policy, const PriorityOptions& priority,
                                  std::deque<Req*>& waiting, cache::RadixCache& tree,
                                  std::mt19937_64& rng);

}  // namespace sgl::scheduler
