// CUDA graph capture sizes: the default buckets and a listed set.
#include "runner/graph_batch_sizes.h"

#include <algorithm>

namespace sgl::runner {

std::vector<int32_t> cuda_graph_batch_sizes(int32_t max_bs) {
  std::vector<int32_t> sizes;
  for (int32_t b : {1, 2, 4, 8}) {
    if (b <= max_bs) sizes.push_back(b);
  }
  for (int32_t b = 16; b <= max_bs; b += 8) sizes.push_back(b);
  if (max_bs > 0 && sizes.back() != max_bs) sizes.push_back(max_bs);
  return sizes;
}

std::vector<int32_t> graph_batch_sizes(const std::vector<int32_t>& listed, int64_t max_bs) {
  if (max_bs < 1) return {};
  if (listed.empty()) {
    return cuda_graph_batch_sizes(static_cast<int32_t>(std::min<int64_t>(max_bs, INT32_MAX)));
  }
  std::vector<int32_t> sizes;
  for (const int32_t b : listed) {
    if (b >= 1 && b <= max_bs) sizes.push_back(b);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

}  // namespace sgl::runner
