// reduce_add_rms_norm: the fold where the communicator has it, else the two calls.
#include "model/layers/residual_norm.h"

#include "core/check.h"
#include "kernels/rms_norm.h"

namespace sgl::model {

void reduce_add_rms_norm(const Tensor& hidden, const Tensor& residual, const Tensor& weight,
                         double eps, bool partial, distributed::Communicator* comm,
                         backend::Stream stream) {
  if (partial) {
    SGL_CHECK(comm != nullptr) << "a partial sum to reduce needs a communicator";
    if (comm->all_reduce_add_rms_norm(hidden, residual, weight, static_cast<float>(eps), stream)) {
      return;
    }
    comm->all_reduce(hidden, distributed::ReduceOp::kSum, stream);
  }
  kernels::fused_add_rms_norm(hidden, residual, weight, eps, stream);
}

}  // namespace sgl::model
