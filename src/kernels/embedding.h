// Embedding lookup: out[t, :] = table[ids[t], :].
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// ids: i32 [T]; table: [V, H]; out: [T, H] (same dtype as table). Ids outside [0, V) abort.
void embedding(const Tensor& ids, const Tensor& table, const Tensor& out, backend::Stream stream);

// A tensor-parallel rank's part of the lookup: table [V_shard, H] holds vocabulary rows
// [vocab_start, vocab_start + V_shard) of vocab_size; out[t, :] is ids[t]'s row when it lies
// there, else zeros (the ranks' parts add up to the lookup). Ids outside [0, vocab_size) abort.
void embedding_shard(const Tensor& ids, const Tensor& table, int64_t vocab_start,
                     int64_t vocab_size, const Tensor& out, backend::Stream stream);

}  // namespace sgl::kernels
