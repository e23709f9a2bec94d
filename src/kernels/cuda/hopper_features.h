// Whether this build runs the Hopper (sm_90a) kernels on a device: wgmma, TMA and register
// reallocation exist only in sm_90a code, so those kernels compile to empty bodies for any other
// target (a build for "90" rather than "90a", or PTX compiled for a newer GPU), and an empty
// kernel would leave its outputs unwritten. Their users ask this besides the compute capability.
#pragma once

namespace sgl::kernels::cuda {

// Compute capability 9.0 and the image the runtime picks for it compiled as sm_90a (a probe
// kernel reports which it got). `device_index` must be valid.
bool hopper_kernels_run(int device_index);

}  // namespace sgl::kernels::cuda
