// HeapPeak: the live heap bytes of this process and their high-water mark, counted by a malloc
// replacement linked into the test binary (heap_peak.cpp; not built under sanitizers).
#pragma once

#include <cstdint>

namespace sgl::test {

// Bytes (malloc_usable_size) of every block malloc, calloc, realloc, the aligned allocators and,
// through them, operator new hand out and free takes back, counted in this process only.
int64_t heap_live_bytes();

// Measures the peak heap growth over a stretch of code: the largest live - start seen between
// construction and peak_growth(). Peaks of other threads count too: measure with no others
// allocating.
class HeapPeak {
 public:
  HeapPeak();
  int64_t peak_growth() const;

 private:
  int64_t start_;
};

}  // namespace sgl::test
