// CudaGraph: stream capture, instantiation, replay.
#include "backend/cuda/cuda_graph.h"

#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"

namespace sgl::backend {

CudaGraph CudaGraph::capture(Stream stream, const std::function<void()>& body) {
  auto native = cuda::native_stream(stream);
  SGL_CHECK(native != nullptr) << "CUDA graphs are captured on a created stream";
  // Thread-local mode: other threads may keep using CUDA (e.g. the engine's uploads).
  SGL_CUDA_CHECK(cudaStreamBeginCapture(native, cudaStreamCaptureModeThreadLocal));
  body();
  cudaGraph_t graph = nullptr;
  SGL_CUDA_CHECK(cudaStreamEndCapture(native, &graph));
  cudaGraphExec_t exec = nullptr;
  SGL_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CudaGraph out;
  out.graph_ = graph;
  out.exec_ = exec;
  return out;
}

void CudaGraph::replay(Stream stream) const {
  SGL_CHECK(exec_ != nullptr) << "replay of an empty CudaGraph";
  SGL_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), cuda::native_stream(stream)));
}

CudaGraph::~CudaGraph() { release(); }

void CudaGraph::release() {
  if (exec_ != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_ != nullptr) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
  exec_ = graph_ = nullptr;
}

CudaGraph::CudaGraph(CudaGraph&& other) noexcept
    : graph_(std::exchange(other.graph_, nullptr)), exec_(std::exchange(other.exec_, nullptr)) {}

CudaGraph& CudaGraph::operator=(CudaGraph&& other) noexcept {
  if (this != &other) {
    release();
    graph_ = std::exchange(other.graph_, nullptr);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

}  // namespace sgl::backend
