// VirtualMemory: address ranges whose backing memory is given back and taken again while the
// addresses stay reserved (SGLang's memory saver: what was captured over them stays valid).
// HostVirtualMemory backs host ranges with anonymous mappings; backend/cuda has the GPU's.
#pragma once

#include <cstddef>

#include "core/device.h"

namespace sgl {

class VirtualMemory {
 public:
  virtual ~VirtualMemory() = default;
  virtual Device device() const = 0;
  // What reserve / commit sizes and addresses are multiples of.
  virtual size_t granularity() const = 0;
  // Addresses for `bytes` (a multiple of granularity()), with no memory behind them; aborts
  // when none are left.
  virtual void* reserve(size_t bytes) = 0;
  // Gives reserved addresses back (decommitted ones).
  virtual void unreserve(void* base, size_t bytes) = 0;
  // Backs a reserved range with fresh memory (contents unspecified) readable and writable by
  // the device; false when the device has not that much left.
  virtual bool commit(void* base, size_t bytes) = 0;
  // Gives a committed range's memory back to the device; the addresses stay reserved, and any
  // access to them faults until they are committed again.
  virtual void decommit(void* base, size_t bytes) = 0;
  // Host memory for contents kept across a release (uninitialized; a GPU's is page-locked, so
  // the copies run at the link's speed) and its release.
  virtual void* allocate_host(size_t bytes) = 0;
  virtual void free_host(void* host) = 0;
  // Copies between committed memory and the host, after the device's queued work.
  virtual void copy_to_host(void* host, const void* src, size_t bytes) = 0;
  virtual void copy_from_host(void* dst, const void* host, size_t bytes) = 0;
};

// Host ranges: reserved as inaccessible anonymous mappings, committed by making them readable
// and writable (pages appear, zero-filled, on first touch), decommitted by dropping the pages
// and making the range inaccessible again.
class HostVirtualMemory final : public VirtualMemory {
 public:
  HostVirtualMemory();
  Device device() const override { return Device::cpu(); }
  size_t granularity() const override { return page_bytes_; }
  void* reserve(size_t bytes) override;
  void unreserve(void* base, size_t bytes) override;
  bool commit(void* base, size_t bytes) override;
  void decommit(void* base, size_t bytes) override;
  void* allocate_host(size_t bytes) override;
  void free_host(void* host) override;
  void copy_to_host(void* host, const void* src, size_t bytes) override;
  void copy_from_host(void* dst, const void* host, size_t bytes) override;

 private:
  size_t page_bytes_;
};

}  // namespace sgl
