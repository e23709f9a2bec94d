// PriorityOptions: priorities resolved and compared in either direction without overflow.
#include "scheduler/priority.h"

#include <limits>

namespace sgl::scheduler {

int64_t PriorityOptions::resolve(std::optional<int64_t> given) const {
  if (given) return *given;
  if (default_value) return *default_value;
  return low_values_first ? std::numeric_limits<int64_t>::max()
                          : std::numeric_limits<int64_t>::min();
}

int64_t PriorityOptions::gap(int64_t a, int64_t b) const {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t d = 0;
  if (__builtin_sub_overflow(a, b, &d)) d = a > b ? kMax : -kMax;
  if (d == std::numeric_limits<int64_t>::min()) d = -kMax;
  return low_values_first ? -d : d;
}

}  // namespace sgl::scheduler
