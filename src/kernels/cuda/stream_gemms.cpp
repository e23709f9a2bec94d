#include "kernels/cuda/stream_gemms.h"

#include <memory>

#include "backend/stream_slot.h"
#include "core/check.h"
#include "kernels/cuda/cuda_ops.h"

namespace sgl::kernels::cuda {

StreamGemms& StreamGemms::of(backend::Stream stream) {
  SGL_CHECK(stream.gemm != nullptr && stream.workspace != nullptr)
      << "linear on CUDA needs a stream made by CudaStream (GEMM slot and workspace)";
  return stream.gemm->get_or_create<StreamGemms>([&] {
    return std::make_unique<StreamGemms>(stream.workspace, stream.workspace_bytes,
                                         stream.device.index);
  });
}

Status set_hopper_linear(backend::Stream stream, bool enable) {
  StreamGemms& gemms = StreamGemms::of(stream);
  if (enable && !gemms.hopper.available()) {
    return unimplemented("--linear-backend hopper needs a compute capability 9.0 GPU (H100/H200)");
  }
  gemms.hopper_for_linear = enable;
  return Status::ok_status();
}

}  // namespace sgl::kernels::cuda
