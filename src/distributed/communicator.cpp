// Reductions shared by the communicators.
#include "distributed/communicator.h"

#include <algorithm>

namespace sgl::distributed {

void reduce_into(float* acc, const float* a, int64_t n, ReduceOp op) {
  if (op == ReduceOp::kSum) {
    for (int64_t i = 0; i < n; ++i) acc[i] += a[i];
  } else {
    for (int64_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], a[i]);
  }
}

}  // namespace sgl::distributed
