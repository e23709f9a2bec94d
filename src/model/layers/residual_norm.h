// The residual add + RMSNorm between a decoder's blocks, with the all-reduce of a row-parallel
// block's output in front of it at tensor parallelism: one kernel where the communicator folds
// the two (SGLang's all-reduce fusion: the custom all-reduce at decode sizes), else the
// all-reduce and then the norm.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"
#include "distributed/communicator.h"

namespace sgl::model {

// residual += hidden; hidden = rms_norm(residual) * weight (kernels::fused_add_rms_norm), where
// `partial` says hidden holds this rank's partial sum, to be all-reduced over `comm` first.
// hidden: [n, H]; residual: [n, H] (f32 on CUDA); weight: [H].
void reduce_add_rms_norm(const Tensor& hidden, const Tensor& residual, const Tensor& weight,
                         double eps, bool partial, distributed::Communicator* comm,
                         backend::Stream stream);

}  // namespace sgl::model
