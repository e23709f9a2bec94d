// Allocations over reserved address ranges: large ones each in a range of their own, small ones
// carved from shared slabs (a device's commit granularity is 2 MiB; a model has hundreds of
// norm weights of a few KB).
#include "core/releasable_allocator.h"

#include <string>

#include "core/check.h"

namespace sgl {
namespace {

constexpr size_t kAlign = 256;
constexpr size_t kSlabBytes = size_t{2} << 20;

size_t round_up(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

}  // namespace

ReleasableAllocator::ReleasableAllocator(std::unique_ptr<VirtualMemory> memory)
    : memory_(std::move(memory)), slab_bytes_(round_up(kSlabBytes, memory_->granularity())) {}

ReleasableAllocator::~ReleasableAllocator() {
  while (!regions_.empty()) free_region(regions_.begin());
}

std::byte* ReleasableAllocator::new_region(size_t bytes) {
  auto* base = static_cast<std::byte*>(memory_->reserve(bytes));
  SGL_CHECK(memory_->commit(base, bytes)) << "out of memory on " << memory_->device().to_string()
                                          << " allocating " << bytes << " bytes";
  regions_.emplace(base, Region{bytes});
  return base;
}

void ReleasableAllocator::drop_kept(Region& region) {
  if (region.kept != nullptr) memory_->free_host(region.kept);
  region.kept = nullptr;
}

void ReleasableAllocator::free_region(Regions::iterator it) {
  drop_kept(it->second);
  if (!released_) memory_->decommit(it->first, it->second.bytes);
  memory_->unreserve(it->first, it->second.bytes);
  if (it->first == slab_) slab_ = nullptr;
  regions_.erase(it);
}

void* ReleasableAllocator::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  std::lock_guard lock(mutex_);
  SGL_CHECK(!released_) << "an allocation of " << bytes
                        << " bytes while the memory is released (resume it first)";
  const size_t rounded = round_up(bytes, kAlign);
  if (rounded > slab_bytes_ / 4) {
    std::byte* base = new_region(round_up(rounded, memory_->granularity()));
    Region& region = regions_.at(base);
    region.used = rounded;
    region.live = 1;
    return base;
  }
  if (slab_ == nullptr || regions_.at(slab_).used + rounded > slab_bytes_) {
    std::byte* previous = slab_;
    slab_ = new_region(slab_bytes_);
    if (previous != nullptr && regions_.at(previous).live == 0) {
      free_region(regions_.find(previous));
    }
  }
  Region& slab = regions_.at(slab_);
  std::byte* ptr = slab_ + slab.used;
  slab.used += rounded;
  ++slab.live;
  return ptr;
}

void ReleasableAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  auto* p = static_cast<std::byte*>(ptr);
  auto it = regions_.upper_bound(p);
  SGL_CHECK(it != regions_.begin()) << "deallocate of a pointer this allocator did not give";
  --it;
  SGL_CHECK(p < it->first + it->second.used && it->second.live > 0)
      << "deallocate of a pointer this allocator did not give";
  // The current slab stays for the next small allocations.
  if (--it->second.live == 0 && it->first != slab_) free_region(it);
}

size_t ReleasableAllocator::release(bool keep_contents) {
  std::lock_guard lock(mutex_);
  SGL_CHECK(!released_) << "memory released twice";
  for (auto& [base, region] : regions_) {
    if (keep_contents) {
      region.kept = memory_->allocate_host(region.used);
      memory_->copy_to_host(region.kept, base, region.used);
    }
    memory_->decommit(base, region.bytes);
  }
  released_ = true;
  return reserved_bytes();
}

Status ReleasableAllocator::resume() {
  std::lock_guard lock(mutex_);
  SGL_CHECK(released_) << "memory resumed without a release";
  for (auto it = regions_.begin(); it != regions_.end(); ++it) {
    if (memory_->commit(it->first, it->second.bytes)) continue;
    for (auto done = regions_.begin(); done != it; ++done) {
      memory_->decommit(done->first, done->second.bytes);
    }
    return resource_exhausted("resuming needs " + std::to_string(reserved_bytes()) + " bytes on " +
                              memory_->device().to_string() +
                              ", which it does not have free; it stays released");
  }
  for (auto& [base, region] : regions_) {
    if (region.kept == nullptr) continue;
    memory_->copy_from_host(base, region.kept, region.used);
    drop_kept(region);
  }
  released_ = false;
  return Status::ok_status();
}

bool ReleasableAllocator::released() const {
  std::lock_guard lock(mutex_);
  return released_;
}

size_t ReleasableAllocator::reserved_bytes() const {
  size_t bytes = 0;
  for (const auto& [base, region] : regions_) bytes += region.bytes;
  return bytes;
}

size_t ReleasableAllocator::committed_bytes() const {
  std::lock_guard lock(mutex_);
  return reserved_bytes();
}

}  // namespace sgl
