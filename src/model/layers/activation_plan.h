// ActivationPlan: the activation scratch a model and its blocks declare, sized and allocated once.
#pragma once

#include <cstdint>
#include <vector>

#include "core/allocator.h"
#include "core/buffer.h"
#include "core/dtype.h"

namespace sgl::model {

// Blocks declare the buffers their forward needs (for the model's largest batch); the model sums
// them into its memory plan before loading and allocates them, in declaration order, after.
// Every layer's block of one kind shares that kind's buffers: layers run one at a time.
class ActivationPlan {
 public:
  // `*slot` gets a [rows, cols] Buffer of `dtype` at allocate(); it must outlive the plan.
  void add(Buffer* slot, DType dtype, int64_t rows, int64_t cols);
  int64_t bytes() const { return bytes_; }
  void allocate(Allocator& allocator) const;

 private:
  struct Entry {
    Buffer* slot;
    DType dtype;
    int64_t rows;
    int64_t cols;
  };
  std::vector<Entry> entries_;
  int64_t bytes_ = 0;
};

}  // namespace sgl::model
