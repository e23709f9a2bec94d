// The batch sizes CUDA graphs are captured for: SGLang's default buckets, or the sizes a user
// lists (--cuda-graph-bs). A batch replays the smallest captured size that holds it (padded);
// a batch past the largest runs eagerly.
#pragma once

#include <cstdint>
#include <vector>

namespace sgl::runner {

// The default buckets for `max_bs`: 1, 2, 4, 8, then every multiple of 8 up to max_bs (and
// max_bs itself).
std::vector<int32_t> cuda_graph_batch_sizes(int32_t max_bs);

// The sizes in `listed` (any order, repeats allowed) that are at most `max_bs`, ascending and
// without repeats; the default buckets for max_bs when nothing is listed. Empty when
// max_bs < 1.
std::vector<int32_t> graph_batch_sizes(const std::vector<int32_t>& listed, int64_t max_bs);

}  // namespace sgl::runner
