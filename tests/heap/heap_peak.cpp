// A counting malloc for test binaries: each block's usable size is added to a live count on
// allocation and taken off on free, and the count's high-water mark kept. Blocks come from
// glibc's own allocator (__libc_*), so everything a test process allocates, C++ or C libraries
// (PCRE2, utf8proc), is counted.
#include "heap/heap_peak.h"

#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <cstddef>

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* block, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* block);
}

namespace {

// NOTE: globals, as malloc has nowhere else to keep them; constant-initialized, so they count
// from before any constructor runs.
std::atomic<int64_t> live_bytes{0};
std::atomic<int64_t> peak_bytes{0};

void* counted(void* block) {
  if (block == nullptr) return nullptr;
  const auto size = static_cast<int64_t>(malloc_usable_size(block));
  const int64_t live = live_bytes.fetch_add(size, std::memory_order_relaxed) + size;
  int64_t peak = peak_bytes.load(std::memory_order_relaxed);
  while (live > peak && !peak_bytes.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  return block;
}

void uncount(void* block) {
  if (block == nullptr) return;
  live_bytes.fetch_sub(static_cast<int64_t>(malloc_usable_size(block)), std::memory_order_relaxed);
}

}  // namespace

extern "C" {

void* malloc(size_t size) { return counted(__libc_malloc(size)); }

void* calloc(size_t count, size_t size) { return counted(__libc_calloc(count, size)); }

void* realloc(void* block, size_t size) {
  if (block == nullptr) return malloc(size);
  if (size == 0) {
    free(block);
    return nullptr;
  }
  const auto old_size = static_cast<int64_t>(malloc_usable_size(block));
  void* moved = __libc_realloc(block, size);
  if (moved == nullptr) return nullptr;
  if (moved == block) {
    live_bytes.fetch_sub(old_size, std::memory_order_relaxed);
    return counted(moved);
  }
  // A moving realloc held both blocks while it copied.
  counted(moved);
  live_bytes.fetch_sub(old_size, std::memory_order_relaxed);
  return moved;
}

void free(void* block) {
  uncount(block);
  __libc_free(block);
}

void* memalign(size_t alignment, size_t size) { return counted(__libc_memalign(alignment, size)); }

void* aligned_alloc(size_t alignment, size_t size) { return memalign(alignment, size); }

int posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* block = memalign(alignment, size);
  if (block == nullptr) return ENOMEM;
  *out = block;
  return 0;
}

void* valloc(size_t size) { return memalign(4096, size); }

void* pvalloc(size_t size) { return memalign(4096, (size + 4095) / 4096 * 4096); }

void* reallocarray(void* block, size_t count, size_t size) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(block, bytes);
}

}  // extern "C"

namespace sgl::test {

HeapPeak::HeapPeak() : start_(live_bytes.load()) { peak_bytes.store(start_); }

int64_t HeapPeak::peak_growth() const { return peak_bytes.load() - start_; }

}  // namespace sgl::test
