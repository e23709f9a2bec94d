// The residual add + RMSNorm between a decoder's blocks, with the all-reduce of a row-parallel
// block's output in front of it at tensor parallelism: one kernel where the communicator folds
// the two (SGLang's all-reduce fusion: the custom all-reduce at decode sizes), else the
// all-reduce and then the norm.
#pragma once

#include <optional>
#include <utility>

#include "backend/stream.h"
#include "core/tensor.h"
#include "distributed/communicator.h"
#include "kernels/norm_linear.h"

namespace sgl::model {

// residual += hidden; hidden = rms_norm(residual) * weight (kernels::fused_add_rms_norm), where
// `partial` says hidden holds this rank's partial sum, to be all-reduced over `comm` first.
// hidden: [n, H]; residual: [n, H] (f32 on CUDA); weight: [H].
void reduce_add_rms_norm(const Tensor& hidden, const Tensor& residual, const Tensor& weight,
                         double eps, bool partial, distributed::Communicator* comm,
                         backend::Stream stream);

// The residual stream's f32 rows, and where a norm may be folded into the block after it
// (kernels/norm_linear.h: a few tokens on CUDA) spare rows: the folded norm writes the sums there
// while the projection's blocks read `current`, and the two then swap.
struct ResidualStream {
  Tensor current;  // [n, H]
  Tensor spare;    // [n, H] when n <= kNormFoldMaxRows, or undefined: no norm folds
};

// The norm before `block` (a block with folds_input_norm): where the stream has a spare buffer,
// hidden is whole (not a partial sum) and the block can fold it, returns it for the block's
// forward and swaps the stream's buffers; else runs it here (reduce_add_rms_norm) and returns
// nullopt.
template <typename Block>
std::optional<kernels::ResidualRmsNorm> fold_or_run_norm(const Block& block, const Tensor& hidden,
                                                         bool partial, ResidualStream& residual,
                                                         const Tensor& weight, double eps,
                                                         distributed::Communicator* comm,
                                                         backend::Stream stream) {
  if (!partial && residual.spare.defined()) {
    const kernels::ResidualRmsNorm norm{residual.current, residual.spare, weight, eps};
    if (block.folds_input_norm(hidden, norm)) {
      std::swap(residual.current, residual.spare);
      return norm;
    }
  }
  reduce_add_rms_norm(hidden, residual.current, weight, eps, partial, comm, stream);
  return std::nullopt;
}

}  // namespace sgl::model
