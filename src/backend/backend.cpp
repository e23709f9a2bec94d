// Backend queries; CUDA paths compile only with SGL_WITH_CUDA.
#include "backend/backend.h"

#include <unistd.h>

#include "backend/devices.h"
#include "backend/stream.h"
#include "core/check.h"
#ifdef SGL_WITH_CUDA
#include <cuda_runtime.h>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_runtime.h"
#include "backend/cuda/cuda_stream.h"
#include "backend/cuda/cuda_virtual_memory.h"
#endif

namespace sgl::backend {

Result<MemoryInfo> memory_info(Device device) {
  if (device.is_cpu()) {
    long pages = sysconf(_SC_PHYS_PAGES);
    long avail = sysconf(_SC_AVPHYS_PAGES);
    long page = sysconf(_SC_PAGE_SIZE);
    return MemoryInfo{static_cast<size_t>(avail) * page, static_cast<size_t>(pages) * page};
  }
#ifdef SGL_WITH_CUDA
  return cuda::memory_info(device.index);
#else
  return unimplemented("this binary was built without CUDA (configure with -DSGL_WITH_CUDA=ON)");
#endif
}

Status check_device_available(Device device) {
  if (device.is_cpu()) return Status::ok_status();
#ifdef SGL_WITH_CUDA
  return cuda::check_device(device.index);
#else
  return unimplemented("device " + device.to_string() +
                       " requested, but this binary was built without CUDA "
                       "(configure with -DSGL_WITH_CUDA=ON)");
#endif
}

Status set_device_profiler_capture(Device device, bool on) {
  if (device.is_cpu()) return unimplemented("the CUDA profiler needs a CUDA device");
#ifdef SGL_WITH_CUDA
  return cuda::set_profiler_capture(device.index, on);
#else
  (void)on;
  return unimplemented("this binary was built without CUDA");
#endif
}

namespace {
class CpuStream final : public OwnedStream {
 public:
  Stream get() const override { return Stream::cpu(); }
};
}  // namespace

std::unique_ptr<OwnedStream> create_stream(Device device) {
  if (device.is_cpu()) return std::make_unique<CpuStream>();
#ifdef SGL_WITH_CUDA
  return std::make_unique<CudaStream>(device.index);
#else
  SGL_CHECK(false) << "CUDA stream in a build without CUDA";
  return nullptr;
#endif
}

std::unique_ptr<OwnedStream> create_copy_stream(Device device) {
  if (device.is_cpu()) return std::make_unique<CpuStream>();
#ifdef SGL_WITH_CUDA
  return std::make_unique<CudaStream>(device.index, /*gemms=*/false);
#else
  SGL_CHECK(false) << "CUDA stream in a build without CUDA";
  return nullptr;
#endif
}

std::unique_ptr<Allocator> create_staging_allocator(Device device) {
  if (device.is_cpu()) return std::make_unique<CpuAllocator>();
#ifdef SGL_WITH_CUDA
  return std::make_unique<PinnedAllocator>();
#else
  SGL_CHECK(false) << "pinned memory in a build without CUDA";
  return nullptr;
#endif
}

std::unique_ptr<VirtualMemory> create_virtual_memory(Device device) {
  if (device.is_cpu()) return std::make_unique<HostVirtualMemory>();
#ifdef SGL_WITH_CUDA
  return std::make_unique<CudaVirtualMemory>(device.index);
#else
  SGL_CHECK(false) << "GPU virtual memory in a build without CUDA";
  return nullptr;
#endif
}

int cuda_device_count() {
#ifdef SGL_WITH_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clears the error state this call may leave
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

void set_current_device(Device device) {
  if (device.is_cpu()) return;
#ifdef SGL_WITH_CUDA
  SGL_CUDA_CHECK(cudaSetDevice(device.index));
#else
  SGL_CHECK(false) << "CUDA device in a build without CUDA";
#endif
}

void synchronize(Stream stream) {
  if (stream.device.is_cpu()) return;
#ifdef SGL_WITH_CUDA
  cuda::synchronize(stream);
#endif
}

}  // namespace sgl::backend
