// Expert parallelism's token exchange for one sparse block (SGLang's dispatch / combine): the
// rank's share of the batch's tokens go, pair by (token, expert) pair, to the ranks that hold
// their experts, which run the fused MoE kernel on them and send the results back.
//
// Every rank holds the batch's n tokens and their routing (attention and the router are
// tensor-parallel / replicated). Rank r takes the tokens token_slice(n, r, R) gives it, and
// for each of their top-k pairs sends the hidden row, the expert's index in its group and the
// routing weight to every rank of the expert's group (ExpertParallel: moe_tp_size ranks, each
// holding part of the expert's rows). The exchange is the communicator's all_to_all, which
// moves equal chunks: chunk j of R holds `capacity` rows for rank j, capacity = the slice's
// pairs (slice tokens x k: the worst case, every pair to one group), the unused rows marked.
// Each rank runs its local experts once over the rows it received (weighted), sends them back
// with a second all_to_all, and the sender adds up, per token, its k pairs' results from the
// moe_tp_size ranks of each pair's group (the partial sums tensor parallelism would all-reduce,
// summed here in rank order), so a token's output is the same bits on every rank it is sent to.
// Host memory only (the shared-memory communicator): expert parallelism runs on the CPU.
#pragma once

#include <cstdint>

#include "core/buffer.h"
#include "core/device.h"
#include "core/tensor.h"
#include "distributed/communicator.h"
#include "model/expert_parallel.h"
#include "model/layers/activation_plan.h"

namespace sgl::model {

// Rank `rank`'s tokens of n: [start, start + size), start = rank * per_rank, per_rank =
// ceil(n / ranks) (the last ranks' slices may be short or empty).
struct TokenSlice {
  int64_t start = 0;
  int64_t size = 0;
  int64_t per_rank = 0;
};
TokenSlice token_slice(int64_t num_tokens, int rank, int ranks);

// The sizes the exchange works with.
struct ExpertDispatchShape {
  int64_t hidden_size = 0;
  int64_t top_k = 0;
  int64_t local_experts = 0;            // experts per group (num_experts / ep_size)
  int64_t local_intermediate_size = 0;  // each expert's rows at this rank
  ExpertParallel ep;
  int ranks = 1;  // the communicator's: ep_size x moe_tp_size
};

struct ExpertDispatchScratch {
  // R chunks of `capacity` rows, for up to max_num_tokens tokens.
  Buffer send_meta;       // i32 [R * C, 2]: the row's expert in its group (-1: unused), weight bits
  Buffer recv_meta;       // i32 [R * C, 2]
  Buffer send_rows;       // [R * C, H]: the dispatched rows; then the results that came back
  Buffer recv_rows;       // [R * C, H]: the received rows; the local experts' results in place
  Buffer pair_slots;      // i32 [S, k]: each of the slice's pairs' row in its group's chunks
  Buffer expert_ids;      // i32 [R * C, 1]: the received rows' experts, compacted
  Buffer expert_weights;  // f32 [R * C, 1]: their routing weights
  Buffer workspace;       // fused_moe's, for R * C rows at k = 1
};

void plan_expert_dispatch(const ExpertDispatchShape& shape, int64_t max_num_tokens, DType dtype,
                          Device device, ExpertDispatchScratch& scratch, ActivationPlan& plan);

// The routed experts' output for the rank's slice of the batch: out [slice.size, H] (contiguous)
// = for each slice token t, sum_j topk_weights[t, j] * expert_{topk_ids[t, j]}(hidden[t]).
// hidden: [n, H]; topk_weights: f32 [n, k]; topk_ids: i32 [n, k], global expert ids; the same on
// every rank. w_gate_up: [local_experts, 2I, H] and w_down: [local_experts, H, I], the rank's
// experts (I = its share of the rows). Every rank of `comm` must call it (collectives).
void expert_parallel_moe(const Tensor& hidden, const Tensor& topk_weights, const Tensor& topk_ids,
                         const Tensor& w_gate_up, const Tensor& w_down,
                         const ExpertDispatchShape& shape, const ExpertDispatchScratch& scratch,
                         const Tensor& out, distributed::Communicator& comm,
                         backend::Stream stream);

}  // namespace sgl::model
