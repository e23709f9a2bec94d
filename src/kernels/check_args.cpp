// Shared failure path of the op dispatchers.
#include "kernels/check_args.h"

#include <cstdlib>

namespace sgl::kernels::detail {

void no_cuda(const char* op) {
  SGL_CHECK(false) << op << ": a CUDA tensor reached a binary built without CUDA";
  std::abort();
}

}  // namespace sgl::kernels::detail
