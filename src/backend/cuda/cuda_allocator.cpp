// cudaMalloc / cudaMallocHost backed allocators.
#include "backend/cuda/cuda_allocator.h"

#include "backend/cuda/cuda_check.h"

namespace sgl::backend {

void* CudaAllocator::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  SGL_CUDA_CHECK(cudaSetDevice(device_index_));
  void* ptr = nullptr;
  SGL_CUDA_CHECK(cudaMalloc(&ptr, bytes));
  return ptr;
}

void CudaAllocator::deallocate(void* ptr) {
  if (ptr != nullptr) SGL_CUDA_CHECK(cudaFree(ptr));
}

void* PinnedAllocator::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* ptr = nullptr;
  SGL_CUDA_CHECK(cudaMallocHost(&ptr, bytes));
  return ptr;
}

void PinnedAllocator::deallocate(void* ptr) {
  if (ptr != nullptr) SGL_CUDA_CHECK(cudaFreeHost(ptr));
}

}  // namespace sgl::backend
