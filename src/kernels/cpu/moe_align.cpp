// CPU moe_align_block_size: (token, slot) pairs grouped by expert, each group padded to whole
// blocks.
#include <algorithm>
#include <vector>

#include "kernels/cpu/moe_ops.h"

namespace sgl::kernels::cpu {

void moe_align_block_size(const Tensor& topk_ids, int64_t num_experts, int64_t block_size,
                          const MoeAlignment& out) {
  const int64_t entries = topk_ids.numel();
  const int32_t* ids = topk_ids.data<int32_t>();
  int32_t* sorted = out.sorted_token_ids.data<int32_t>();
  int32_t* block_expert = out.expert_ids.data<int32_t>();
  int32_t* offsets = out.expert_offsets.data<int32_t>();

  std::vector<int64_t> cursor(num_experts, 0);  // counts first, then write positions
  for (int64_t i = 0; i < entries; ++i) {
    SGL_CHECK(ids[i] >= -1 && ids[i] < num_experts) << "moe_align_block_size: expert id " << ids[i]
                                                    << " not in [0, " << num_experts << ") nor -1";
    if (ids[i] >= 0) ++cursor[ids[i]];  // -1: a masked pair, in no group
  }
  int64_t total = 0;
  for (int64_t e = 0; e < num_experts; ++e) {
    offsets[e] = static_cast<int32_t>(total);
    total += (cursor[e] + block_size - 1) / block_size * block_size;
    cursor[e] = offsets[e];
  }
  offsets[num_experts] = static_cast<int32_t>(total);
  out.num_tokens_post_padded.data<int32_t>()[0] = static_cast<int32_t>(total);

  std::fill_n(sorted, out.sorted_token_ids.size(0), static_cast<int32_t>(entries));
  for (int64_t i = 0; i < entries; ++i) {
    if (ids[i] >= 0) sorted[cursor[ids[i]]++] = static_cast<int32_t>(i);
  }

  std::fill_n(block_expert, out.expert_ids.size(0), -1);
  for (int64_t e = 0; e < num_experts; ++e) {
    for (int64_t b = offsets[e] / block_size; b < offsets[e + 1] / block_size; ++b) {
      block_expert[b] = static_cast<int32_t>(e);
    }
  }
}

}  // namespace sgl::kernels::cpu
