// CUDA virtual memory management through the driver's entry points, found at run time.
#include "backend/cuda/cuda_virtual_memory.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.h"
#include "core/check.h"

namespace sgl::backend {

struct CudaVirtualMemory::DriverApi {
  PFN_cuMemAddressReserve_v10020 address_reserve = nullptr;
  PFN_cuMemAddressFree_v10020 address_free = nullptr;
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;
  PFN_cuMemGetAllocationGranularity_v10020 granularity = nullptr;
};

namespace {

template <typename Fn>
void find_entry_point(const char* name, Fn& fn) {
  cudaDriverEntryPointQueryResult found{};
  void* address = nullptr;
  SGL_CUDA_CHECK(
      cudaGetDriverEntryPointByVersion(name, &address, 10020, cudaEnableDefault, &found));
  SGL_CHECK(found == cudaDriverEntryPointSuccess && address != nullptr)
      << "the CUDA driver has no " << name << " (virtual memory management)";
  fn = reinterpret_cast<Fn>(address);
}

#define SGL_CU_CHECK(expr)                                                                        \
  do {                                                                                            \
    const CUresult sgl_cu_result_ = (expr);                                                       \
    SGL_CHECK(sgl_cu_result_ == CUDA_SUCCESS) << #expr << " failed: CUresult " << sgl_cu_result_; \
  } while (false)

CUmemAllocationProp device_memory(int device_index) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device_index;
  return prop;
}

CUdeviceptr address(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

}  // namespace

const CudaVirtualMemory::DriverApi& CudaVirtualMemory::api() const {
  // NOTE: function pointers into the driver, the same for every instance; found once.
  static const DriverApi found = [] {
    DriverApi a;
    find_entry_point("cuMemAddressReserve", a.address_reserve);
    find_entry_point("cuMemAddressFree", a.address_free);
    find_entry_point("cuMemCreate", a.create);
    find_entry_point("cuMemRelease", a.release);
    find_entry_point("cuMemMap", a.map);
    find_entry_point("cuMemUnmap", a.unmap);
    find_entry_point("cuMemSetAccess", a.set_access);
    find_entry_point("cuMemGetAllocationGranularity", a.granularity);
    return a;
  }();
  return found;
}

CudaVirtualMemory::CudaVirtualMemory(int device_index) : device_index_(device_index) {
  const CUmemAllocationProp prop = device_memory(device_index_);
  SGL_CU_CHECK(api().granularity(&granularity_, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
}

void* CudaVirtualMemory::reserve(size_t bytes) {
  CUdeviceptr base = 0;
  SGL_CU_CHECK(api().address_reserve(&base, bytes, granularity_, 0, 0));
  return reinterpret_cast<void*>(base);
}

void CudaVirtualMemory::unreserve(void* base, size_t bytes) {
  SGL_CU_CHECK(api().address_free(address(base), bytes));
}

bool CudaVirtualMemory::commit(void* base, size_t bytes) {
  const CUmemAllocationProp prop = device_memory(device_index_);
  CUmemGenericAllocationHandle handle = 0;
  const CUresult created = api().create(&handle, bytes, &prop, 0);
  if (created == CUDA_ERROR_OUT_OF_MEMORY) return false;
  SGL_CU_CHECK(created);
  SGL_CU_CHECK(api().map(address(base), bytes, 0, handle, 0));
  // The mapping holds the memory from here; unmapping it frees it.
  SGL_CU_CHECK(api().release(handle));
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  SGL_CU_CHECK(api().set_access(address(base), bytes, &access, 1));
  return true;
}

void CudaVirtualMemory::decommit(void* base, size_t bytes) {
  // No queued kernel may still read what is unmapped.
  SGL_CUDA_CHECK(cudaSetDevice(device_index_));
  SGL_CUDA_CHECK(cudaDeviceSynchronize());
  SGL_CU_CHECK(api().unmap(address(base), bytes));
}

void* CudaVirtualMemory::allocate_host(size_t bytes) {
  void* host = nullptr;
  SGL_CUDA_CHECK(cudaMallocHost(&host, bytes));
  return host;
}

void CudaVirtualMemory::free_host(void* host) { SGL_CUDA_CHECK(cudaFreeHost(host)); }

void CudaVirtualMemory::copy_to_host(void* host, const void* src, size_t bytes) {
  SGL_CUDA_CHECK(cudaSetDevice(device_index_));
  SGL_CUDA_CHECK(cudaDeviceSynchronize());
  SGL_CUDA_CHECK(cudaMemcpy(host, src, bytes, cudaMemcpyDeviceToHost));
}

void CudaVirtualMemory::copy_from_host(void* dst, const void* host, size_t bytes) {
  SGL_CUDA_CHECK(cudaSetDevice(device_index_));
  SGL_CUDA_CHECK(cudaMemcpy(dst, host, bytes, cudaMemcpyHostToDevice));
  SGL_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace sgl::backend
