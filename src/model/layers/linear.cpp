// load_linear (the shard rules), Linear::forward and the vocab-parallel embedding and LM head.
#include "model/layers/linear.h"

#include "kernels/convert_stored.h"
#include "kernels/copy.h"
#include "kernels/embedding.h"
#include "kernels/linear.h"

namespace sgl::model {

bool Linear::forward(const Tensor& x, const Tensor& y, backend::Stream stream,
                     distributed::Communicator* comm, bool reduce_results,
                     const Tensor& partial_sums) const {
  // A communicator at one rank runs the all-reduce too (the identity): the single-rank test of
  // a communicator's path through the model.
  const bool partial = shard == ShardRule::kRow && (tp_size > 1 || comm != nullptr);
  if (!partial || !reduce_results) {
    kernels::linear(x, weight, bias.tensor(), y, stream);
    return partial;
  }
  SGL_CHECK(comm != nullptr) << "a row-parallel linear at tp " << tp_size
                             << " needs a communicator";
  if (!partial_sums.defined() || y.dtype() == DType::kF32) {
    kernels::linear(x, weight, bias.tensor(), y, stream);
    comm->all_reduce(y, distributed::ReduceOp::kSum, stream);
    return false;
  }
  SGL_CHECK(partial_sums.dtype() == DType::kF32 && partial_sums.size(0) >= y.size(0) &&
            partial_sums.size(1) == y.size(1))
      << "partial sums " << partial_sums.shape_string() << " for a row-parallel output "
      << y.shape_string();
  const Tensor sums = partial_sums.slice_rows(0, y.size(0));  // f32 [T, out]
  kernels::linear(x, weight, bias.tensor(), sums, stream);
  comm->all_reduce(sums, distributed::ReduceOp::kSum, stream);
  kernels::convert_stored(sums.raw(), kernels::StoredFormat::kF32, y, stream);
  return false;
}

Status load_linear(WeightLoader& weights, const LinearSpec& spec, Linear& out) {
  SGL_CHECK(!spec.modules.empty() && spec.modules.size() == spec.out_features.size());
  SGL_CHECK(spec.heads.empty() || spec.heads.size() == spec.modules.size());
  SGL_CHECK(spec.shard != ShardRule::kVocab || spec.modules.size() == 1);
  const TensorParallel tp = spec.tp;
  out.shard = spec.shard;
  out.tp_size = tp.size;
  std::vector<std::string> names, bias_names;
  std::vector<std::vector<int64_t>> shapes, bias_shapes;
  std::vector<TensorSlice> slices, bias_slices;
  for (size_t i = 0; i < spec.modules.size(); ++i) {
    const std::string& module = spec.modules[i];
    const int64_t rows = spec.out_features[i];
    names.push_back(module + ".weight");
    shapes.push_back({rows, spec.in_features});
    bias_names.push_back(module + ".bias");
    bias_shapes.push_back({rows});
    TensorSlice weight_slice, bias_slice;  // whole
    if (tp.size > 1 && spec.shard != ShardRule::kReplicated) {
      if (spec.shard == ShardRule::kRow) {
        // Input columns: the rank's share of the features its column-parallel producer made.
        SGL_ASSIGN_OR_RETURN(const ShardRange cols, shard_of(spec.in_features, spec.in_features, tp,
                                                             module + "'s input columns"));
        weight_slice = {.dim = 1, .start = cols.start, .size = cols.size};
      } else {
        const int64_t units = spec.heads.empty() ? rows : spec.heads[i];
        const std::string what =
            module + (spec.shard == ShardRule::kVocab ? "'s vocabulary" : "'s output rows");
        SGL_ASSIGN_OR_RETURN(const ShardRange r, shard_of(rows, units, tp, what));
        weight_slice = bias_slice = {.dim = 0, .start = r.start, .size = r.size};
        if (spec.shard == ShardRule::kVocab) out.vocab_start = r.start;
      }
    }
    slices.push_back(weight_slice);
    bias_slices.push_back(bias_slice);
  }
  out.vocab_size = spec.out_features[0];
  // A row shard's partial sums are added up: one rank adds the bias.
  const bool bias = spec.bias && !(spec.shard == ShardRule::kRow && tp.size > 1 && tp.rank > 0);
  if (spec.modules.size() == 1) {
    SGL_RETURN_IF_ERROR(weights.store(out.weight, weights.load(names[0], shapes[0], slices[0])));
    if (bias) {
      SGL_RETURN_IF_ERROR(
          weights.store(out.bias, weights.load(bias_names[0], bias_shapes[0], bias_slices[0])));
    }
    return Status::ok_status();
  }
  SGL_RETURN_IF_ERROR(weights.store(out.weight, weights.load_concat(names, shapes, slices)));
  if (bias) {
    SGL_RETURN_IF_ERROR(
        weights.store(out.bias, weights.load_concat(bias_names, bias_shapes, bias_slices)));
  }
  return Status::ok_status();
}

void embed_tokens(const Linear& table, const Tensor& ids, const Tensor& out, backend::Stream stream,
                  distributed::Communicator* comm) {
  if (table.tp_size == 1 && comm == nullptr) {
    return kernels::embedding(ids, table.weight, out, stream);
  }
  SGL_CHECK(table.shard == ShardRule::kVocab && comm != nullptr)
      << "a vocab-parallel embedding at tp " << table.tp_size << " needs a communicator";
  // Rows other ranks hold are zeros here: the sum is each token's one row, exactly.
  kernels::embedding_shard(ids, table.weight, table.vocab_start, table.vocab_size, out, stream);
  comm->all_reduce(out, distributed::ReduceOp::kSum, stream);
}

void lm_head_logits(const Linear& head, const Tensor& x, const Tensor& local,
                    const Tensor& gathered, const Tensor& logits, backend::Stream stream,
                    distributed::Communicator* comm) {
  if (head.tp_size == 1) {
    head.forward(x, logits, stream);
    // One rank's gather is its own part, in place (a communicator's identity at one rank).
    if (comm != nullptr) comm->all_gather(logits, logits, stream);
    return;
  }
  SGL_CHECK(head.shard == ShardRule::kVocab && comm != nullptr)
      << "a vocab-parallel LM head at tp " << head.tp_size << " needs a communicator";
  const int64_t t = x.size(0), part = head.weight.tensor().size(0), tp = head.tp_size;
  SGL_CHECK(logits.size(0) == t && logits.size(1) == part * tp && logits.is_contiguous())
      << "lm_head_logits: logits " << logits.shape_string();
  const Tensor mine = local.slice_rows(0, t);  // f32 [t, V / tp]
  head.forward(x, mine, stream);
  const Tensor all = gathered.slice_rows(0, tp * t);  // f32 [tp x t, V / tp], rank-major
  comm->all_gather(mine, all, stream);
  // Rank k's rows hold vocabulary [k * V / tp, (k + 1) * V / tp) of each token: one strided
  // copy per rank into its columns (on the device, a 2-D copy on the stream, graph-capturable).
  for (int64_t k = 0; k < tp; ++k) {
    kernels::copy_columns(all.slice_rows(k * t, t), logits, k * part, stream);
  }
}

}  // namespace sgl::model
