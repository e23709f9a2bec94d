// ActivationPlan.
#include "model/layers/activation_plan.h"

namespace sgl::model {

void ActivationPlan::add(Buffer* slot, DType dtype, int64_t rows, int64_t cols) {
  entries_.push_back({slot, dtype, rows, cols});
  bytes_ += rows * cols * static_cast<int64_t>(dtype_size(dtype));
}

void ActivationPlan::allocate(Allocator& allocator) const {
  for (const Entry& e : entries_) *e.slot = Buffer(allocator, e.dtype, {e.rows, e.cols});
}

}  // namespace sgl::model
