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

// The row of `capacity`-row chunks where `slot` of the chunk for rank `dest` sits.
int64_t chunk_row(int dest, int64_t capacity, int64_t slot) { return dest * capacity + slot; }

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
  const int64_t capacity = slice.per_rank * k;
  const int64_t rows = s.ranks * capacity;
  const size_t row_bytes = static_cast<size_t>(h) * sizeof(float);
  const int group_ranks = s.ep.moe_tp.size;
  const int64_t num_experts = s.local_experts * s.ep.ep_size;

  const Tensor send_meta = scratch.send_meta.tensor().slice_rows(0, rows);
  const Tensor recv_meta = scratch.recv_meta.tensor().slice_rows(0, rows);
  const Tensor send_rows = scratch.send_rows.tensor().slice_rows(0, rows);
  const Tensor recv_rows = scratch.recv_rows.tensor().slice_rows(0, rows);
  const auto* ids = topk_ids.data<int32_t>();
  const auto* weights = topk_weights.data<float>();
  auto* slots = scratch.pair_slots.tensor().data<int32_t>();

  // Dispatch: pair (t, j) to every rank of its expert's group, at the group's next free row of
  // the chunk for that rank (the same row in each of the group's chunks).
  int32_t* meta = send_meta.data<int32_t>();
  std::fill_n(meta, 2 * rows, kUnused);
  std::vector<int64_t> filled(static_cast<size_t>(s.ep.ep_size), 0);  // rows per group's chunk
  for (int64_t t = 0; t < slice.size; ++t) {
    const int64_t token = slice.start + t;
    const float* x = hidden.data<float>() + token * hidden.stride(0);
    for (int64_t j = 0; j < k; ++j) {
      const int32_t expert = ids[token * k + j];
      SGL_CHECK(expert >= 0 && expert < num_experts) << "routed to expert " << expert;
      const auto group = static_cast<int>(expert / s.local_experts);
      const int64_t slot = filled[static_cast<size_t>(group)]++;
      slots[t * k + j] = static_cast<int32_t>(slot);
      for (int q = 0; q < group_ranks; ++q) {
        const int64_t row = chunk_row(group * group_ranks + q, capacity, slot);
        meta[2 * row] = static_cast<int32_t>(expert % s.local_experts);
        meta[2 * row + 1] = std::bit_cast<int32_t>(weights[token * k + j]);
        std::memcpy(send_rows.data<float>() + row * h, x, row_bytes);
      }
    }
  }
  comm.all_to_all(send_meta, recv_meta, stream);
  comm.all_to_all(send_rows, recv_rows, stream);

  // The local experts, once over every received row: the rows moved to the front (in order, so
  // each moves to an earlier row), run in place, then moved back to where they came.
  const int32_t* got = recv_meta.data<int32_t>();
  float* received = recv_rows.data<float>();
  auto* expert_ids = scratch.expert_ids.tensor().data<int32_t>();
  auto* expert_weights = scratch.expert_weights.tensor().data<float>();
  int64_t count = 0;
  for (int64_t row = 0; row < rows; ++row) {
    if (got[2 * row] == kUnused) continue;
    if (row != count) std::memcpy(received + count * h, received + row * h, row_bytes);
    expert_ids[count] = got[2 * row];
    expert_weights[count] = std::bit_cast<float>(got[2 * row + 1]);
    ++count;
  }
  if (count > 0) {
    const Tensor x = recv_rows.slice_rows(0, count);
    kernels::fused_moe(x, w_gate_up, w_down, scratch.expert_weights.tensor().slice_rows(0, count),
                       scratch.expert_ids.tensor().slice_rows(0, count), scratch.workspace.tensor(),
                       x, stream);
  }
  // Last first: a result moves to a later row, whose own result has moved already.
  for (int64_t row = rows - 1; row >= 0 && count > 0; --row) {
    if (got[2 * row] == kUnused) continue;
    --count;
    if (row != count) std::memcpy(received + row * h, received + count * h, row_bytes);
  }

  // Combine: the results go back to their senders (chunk i of send_rows from rank i, each at the
  // row it was sent to), where each token adds its pairs' results from each rank of their group.
  comm.all_to_all(recv_rows, send_rows, stream);
  const float* back = send_rows.data<float>();
  for (int64_t t = 0; t < slice.size; ++t) {
    float* o = out.data<float>() + t * h;
    std::fill_n(o, h, 0.f);
    const int64_t token = slice.start + t;
    for (int64_t j = 0; j < k; ++j) {
      const auto group = static_cast<int>(ids[token * k + j] / s.local_experts);
      for (int q = 0; q < group_ranks; ++q) {
        const float* r = back + chunk_row(group * group_ranks + q, capacity, slots[t * k + j]) * h;
        for (int64_t c = 0; c < h; ++c) o[c] += r[c];
      }
    }
  }
}

}  // namespace sgl::model
