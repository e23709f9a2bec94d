// Host virtual memory over mmap / mprotect / madvise.
#include "core/virtual_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/allocator.h"
#include "core/check.h"

namespace sgl {

HostVirtualMemory::HostVirtualMemory() : page_bytes_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {}

void* HostVirtualMemory::reserve(size_t bytes) {
  SGL_CHECK(bytes > 0 && bytes % page_bytes_ == 0) << "reserve of " << bytes << " bytes";
  void* base = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  SGL_CHECK(base != MAP_FAILED) << "reserving " << bytes
                                << " bytes of host addresses failed: " << std::strerror(errno);
  return base;
}

void HostVirtualMemory::unreserve(void* base, size_t bytes) {
  SGL_CHECK(munmap(base, bytes) == 0) << "munmap failed: " << std::strerror(errno);
}

bool HostVirtualMemory::commit(void* base, size_t bytes) {
  // (The pages themselves come on first touch: out of memory shows then, as for malloc.)
  if (mprotect(base, bytes, PROT_READ | PROT_WRITE) == 0) return true;
  SGL_CHECK(errno == ENOMEM) << "committing " << bytes
                             << " bytes of host memory failed: " << std::strerror(errno);
  return false;
}

void HostVirtualMemory::decommit(void* base, size_t bytes) {
  // The pages go back to the kernel now (the mapping is private and anonymous: a later touch
  // would find zeros), and the range faults on access until committed again.
  SGL_CHECK(madvise(base, bytes, MADV_DONTNEED) == 0 && mprotect(base, bytes, PROT_NONE) == 0)
      << "decommitting " << bytes << " bytes of host memory failed: " << std::strerror(errno);
}

void* HostVirtualMemory::allocate_host(size_t bytes) { return cpu_allocator().allocate(bytes); }

void HostVirtualMemory::free_host(void* host) { cpu_allocator().deallocate(host); }

void HostVirtualMemory::copy_to_host(void* host, const void* src, size_t bytes) {
  std::memcpy(host, src, bytes);
}

void HostVirtualMemory::copy_from_host(void* dst, const void* host, size_t bytes) {
  std::memcpy(dst, host, bytes);
}

}  // namespace sgl
