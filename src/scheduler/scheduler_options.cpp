// Policy names and the new_token_ratio schedule.
#include "scheduler/scheduler_options.h"

#include <algorithm>

namespace sgl::scheduler {

Result<SchedulePolicy> parse_schedule_policy(const std::string& name) {
  if (name == "fcfs") return SchedulePolicy::kFcfs;
  if (name == "lpm") return SchedulePolicy::kLpm;
  if (name == "dfs-weight") return SchedulePolicy::kDfsWeight;
  if (name == "lof") return SchedulePolicy::kLof;
  if (name == "random") return SchedulePolicy::kRandom;
  return invalid_argument("unknown schedule policy '" + name +
                          "' (expected lpm, dfs-weight, fcfs, lof or random)");
}

const char* schedule_policy_name(SchedulePolicy policy) {
  switch (policy) {
    case SchedulePolicy::kFcfs:
      return "fcfs";
    case SchedulePolicy::kLpm:
      return "lpm";
    case SchedulePolicy::kDfsWeight:
      return "dfs-weight";
    case SchedulePolicy::kLof:
      return "lof";
    case SchedulePolicy::kRandom:
      return "random";
  }
  return "?";
}

double SchedulerOptions::init_new_token_ratio() const {
  return std::min(0.7 * schedule_conservativeness, 1.0);
}
double SchedulerOptions::min_new_token_ratio() const {
  return std::min(init_new_token_ratio() * 0.14, 1.0);
}
double SchedulerOptions::new_token_ratio_decay() const {
  return (init_new_token_ratio() - min_new_token_ratio()) / 600.0;
}

}  // namespace sgl::scheduler
