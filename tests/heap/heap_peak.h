// HeapPeak: the live heap bytes of this process and their high-water mark, counted by a malloc
// replacement linked into the test binary (heap_peak.cpp; not built under sanitizers).
#pragma once

#include <cstdint>

namespace sgl::test {

// Measures the peak heap growth over a stretch of code: the largest rise, between construction
// and peak_growth(), of the bytes (malloc_usable_size) of the blocks that malloc, calloc, realloc,
// the aligned allocators and, through them, operator new handed out and free did not take back.
// Other threads' allocations count too: measure with no others allocating. One at a time:
// constructing one restarts the high-water mark.
class HeapPeak {
 public:
  HeapPeak();
  int64_t peak_growth() const;

 private:
  int64_t start_;
};

}  // namespace sgl::test
