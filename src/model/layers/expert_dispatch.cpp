// Expert parallelism's dispatch, local experts and combine, over host memory.
#include "model/layers/expert_dispatch.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "kernels/moe.h"

namespace sgl::model {
namespace {

constexpr int32_t kUnused = -1;  // a chunk row no pair filled

// One batch's exchange: R chunks of `capacity` rows in each buffer.
struct Exchange {
  int64_t hidden = 0;
  int64_t top_k = 0;
  int64_t local_experts = 0;
  int group_ranks = 1;  // moe_tp_size: the ranks every pair goes to
  int64_t capacity = 0;
  int64_t rows = 0;
  Tensor send_meta, recv_meta, send_rows, recv_rows;  // i32 [rows, 2]; [rows, H]
  int32_t* slots = nullptr;                           // [slice tokens, k]

  // The row of the chunk for (or from) rank `rank` where `slot` sits.
  int64_t row(int rank, int64_t slot) const { return rank * capacity + slot; }
  int group_of(int32_t expert) const { return static_cast<int>(expert / local_experts); }
};

// Pair (t, j) to every rank of its expert's group, at the group's next free row of the chunk
// for that rank (the same row in each of the group's chunks); then the two all_to_alls.
void dispatch(const Exchange& x, const Tensor& hidden, const Tensor& topk_weights,
              const Tensor& topk_ids, const TokenSlice& slice, int ep_size,
              distributed::Communicator& comm, backend::Stream stream) {
  const int64_t k = x.top_k, num_experts = x.local_experts * ep_size;
  const auto* ids = topk_ids.data<int32_t>();
  const auto* weights = topk_weights.data<float>();
  int32_t* meta = x.send_meta.data<int32_t>();
  std::fill_n(meta, 2 * x.rows, kUnused);
  std::vector<int64_t> filled(static_cast<size_t>(ep_size), 0);  // rows per group's chunks
  for (int64_t t = 0; t < slice.size; ++t) {
    const int64_t token = slice.start + t;
    const float* row = hidden.data<float>() + token * hidden.stride(0);
    for (int64_t j = 0; j < k; ++j) {
      const int32_t expert = ids[token * k + j];
      SGL_CHECK(expert >= 0 && expert < num_experts) << "routed to expert " << expert;
      const int group = x.group_of(expert);
      const int64_t slot = filled[static_cast<size_t>(group)]++;
      x.slots[t * k + j] = static_cast<int32_t>(slot);
      for (int q = 0; q < x.group_ranks; ++q) {
        const int64_t at = x.row(group * x.group_ranks + q, slot);
        meta[2 * at] = static_cast<int32_t>(expert % x.local_experts);
        meta[2 * at + 1] = std::bit_cast<int32_t>(weights[token * k + j]);
        std::memcpy(x.send_rows.data<float>() + at * x.hidden, row, x.hidden * sizeof(float));
      }
    }
  }
  comm.all_to_all(x.send_meta, x.recv_meta, stream);
  comm.all_to_all(x.send_rows, x.recv_rows, stream);
}

// The local experts, once over every received row (weighted), the results in place: the rows
// moved to the front (in order, so each moves to an earlier row), run, then moved back.
void run_local_experts(const Exchange& x, const Tensor& w_gate_up, const Tensor& w_down,
                       const ExpertDispatchScratch& scratch, backend::Stream stream) {
  const int32_t* got = x.recv_meta.data<int32_t>();
  float* received = x.recv_rows.data<float>();
  const size_t row_bytes = static_cast<size_t>(x.hidden) * sizeof(float);
  auto* expert_ids = scratch.expert_ids.tensor().data<int32_t>();
  auto* expert_weights = scratch.expert_weights.tensor().data<float>();
  int64_t count = 0;
  for (int64_t at = 0; at < x.rows; ++at) {
    if (got[2 * at] == kUnused) continue;
    if (at != count) std::memcpy(received + count * x.hidden, received + at * x.hidden, row_bytes);
    expert_ids[count] = got[2 * at];
    expert_weights[count] = std::bit_cast<float>(got[2 * at + 1]);
    ++count;
  }
  if (count > 0) {
    const Tensor rows = x.recv_rows.slice_rows(0, count);
    kernels::fused_moe(
        rows, w_gate_up, w_down, scratch.expert_weights.tensor().slice_rows(0, count),
        scratch.expert_ids.tensor().slice_rows(0, count), scratch.workspace.tensor(), rows, stream);
  }
  // Last first: a result moves to a later row, whose own result has moved already.
  for (int64_t at = x.rows - 1; at >= 0 && count > 0; --at) {
    if (got[2 * at] == kUnused) continue;
    --count;
    if (at != count) std::memcpy(received + at * x.hidden, received + count * x.hidden, row_bytes);
  }
}

// The results back to their senders (chunk i of send_rows from rank i, each at the row it was
// sent to), where each token adds its pairs' results from every rank of their groups, in order.
void combine(const Exchange& x, const Tensor& topk_ids, const TokenSlice& slice, const Tensor& out,
             distributed::Communicator& comm, backend::Stream stream) {
  comm.all_to_all(x.recv_rows, x.send_rows, stream);
  const int64_t k = x.top_k;
  const auto* ids = topk_ids.data<int32_t>();
  const float* back = x.send_rows.data<float>();
  for (int64_t t = 0; t < slice.size; ++t) {
    float* o = out.data<float>() + t * x.hidden;
    std::fill_n(o, x.hidden, 0.f);
    for (int64_t j = 0; j < k; ++j) {
      const int group = x.group_of(ids[(slice.start + t) * k + j]);
      for (int q = 0; q < x.group_ranks; ++q) {
        const float* r = back + x.row(group * x.group_ranks + q, x.slots[t * k + j]) * x.hidden;
        for (int64_t c = 0; c < x.hidden; ++c) o[c] += r[c];
      }
    }
  }
}

}  // namespace

TokenSlice token_slice(int64_t num_tokens, int rank, int ranks) {
  SGL_CHECK(ranks >= 1 && rank >= 0 && rank < ranks && num_tokens >= 0)
      << "token slice of rank " << rank << " of " << ranks;
  const int64_t per_rank = (num_tokens + ranks - 1) / ranks;
  const int64_t start = std::min(num_tokens, rank * per_rank);
  return {.start = start, .size = std::min(per_rank, num_tokens - start), .per_rank = per_rank};
}

void plan_expert_dispatch(const ExpertDispatchShape& s, int64_t max_num_tokens, DType dtype,
                          Device device, ExpertDispatchScratch& scratch, ActivationPlan& plan) {
  const int64_t per_rank = token_slice(max_num_tokens, 0, s.ranks).per_rank;
  const int64_t rows = s.ranks * per_rank * s.top_k;  // R chunks of the worst-case capacity
  plan.add(&scratch.send_meta, DType::kI32, rows, 2);
  plan.add(&scratch.recv_meta, DType::kI32, rows, 2);
  plan.add(&scratch.send_rows, dtype, rows, s.hidden_size);
  plan.add(&scratch.recv_rows, dtype, rows, s.hidden_size);
  plan.add(&scratch.pair_slots, DType::kI32, per_rank, s.top_k);
  plan.add(&scratch.expert_ids, DType::kI32, rows, 1);
  plan.add(&scratch.expert_weights, DType::kF32, rows, 1);
  const int64_t workspace = kernels::fused_moe_workspace_bytes(
      device, rows, 1, s.local_experts, s.hidden_size, s.local_intermediate_size);
  plan.add(&scratch.workspace, DType::kF32, 1, std::max<int64_t>(1, (workspace + 3) / 4));
}

void expert_parallel_moe(const Tensor& hidden, const Tensor& topk_weights, const Tensor& topk_ids,
                         const Tensor& w_gate_up, const Tensor& w_down,
                         const ExpertDispatchShape& s, const ExpertDispatchScratch& scratch,
                         const Tensor& out, distributed::Communicator& comm,
                         backend::Stream stream) {
  SGL_CHECK(hidden.device().is_cpu() && hidden.dtype() == DType::kF32)
      << "expert parallelism runs on the CPU in f32";
  SGL_CHECK(comm.size() == s.ranks && s.ranks == s.ep.ep_size * s.ep.moe_tp.size)
      << "expert parallelism over " << comm.size() << " ranks, planned for " << s.ranks;
  const int64_t n = hidden.size(0), h = s.hidden_size, k = s.top_k;
  const TokenSlice slice = token_slice(n, comm.rank(), comm.size());
  SGL_CHECK(topk_ids.is_contiguous() && topk_weights.is_contiguous() && topk_ids.size(0) == n &&
            topk_ids.size(1) == k)
      << "expert_parallel_moe: routing must be contiguous [" << n << ", " << k << "]";
  SGL_CHECK(out.is_contiguous() && out.size(0) == slice.size && out.size(1) == h)
      << "expert_parallel_moe: out must be [" << slice.size << ", " << h << "]";
  // Every pair of the slice may go to one group: each chunk has room for all of them.
  Exchange x;
  x.hidden = h;
  x.top_k = k;
  x.local_experts = s.local_experts;
  x.group_ranks = s.ep.moe_tp.size;
  x.capacity = slice.per_rank * k;
  x.rows = s.ranks * x.capacity;
  x.send_meta = scratch.send_meta.tensor().slice_rows(0, x.rows);
  x.recv_meta = scratch.recv_meta.tensor().slice_rows(0, x.rows);
  x.send_rows = scratch.send_rows.tensor().slice_rows(0, x.rows);
  x.recv_rows = scratch.recv_rows.tensor().slice_rows(0, x.rows);
  x.slots = scratch.pair_slots.tensor().data<int32_t>();
  dispatch(x, hidden, topk_weights, topk_ids, slice, s.ep.ep_size, comm, stream);
  run_local_experts(x, w_gate_up, w_down, scratch, stream);
  combine(x, topk_ids, slice, out, comm, stream);
}

}  // namespace sgl::model
