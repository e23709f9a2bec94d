// CudaGraph: a captured, instantiated CUDA graph (RAII, move-only), replayed on a stream.
#pragma once

#include <functional>

#include "backend/stream.h"

namespace sgl::backend {

class CudaGraph {
 public:
  // Records everything `body` queues on `stream` (which must be a non-default CUDA stream)
  // into a graph and instantiates it. Work queued on other streams is not captured; `body`
  // must not synchronize or allocate device memory.
  static CudaGraph capture(Stream stream, const std::function<void()>& body);

  CudaGraph() = default;
  ~CudaGraph();
  CudaGraph(CudaGraph&& other) noexcept;
  CudaGraph& operator=(CudaGraph&& other) noexcept;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Queues the recorded work on `stream`.
  void replay(Stream stream) const;
  bool valid() const { return exec_ != nullptr; }

 private:
  void release();
  void* graph_ = nullptr;  // cudaGraph_t
  void* exec_ = nullptr;   // cudaGraphExec_t
};

}  // namespace sgl::backend
