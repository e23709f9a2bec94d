// PositionRows: per-position outputs a request reports once each, in position order (SGLang's
// return_hidden_states rows and return_routed_experts ids): the prompt's positions, then each
// output token fed back.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "core/check.h"

namespace sgl::scheduler {

template <typename T>
struct PositionRows {
  // Positions [0, len) have had their rows taken; those not yet in an update wait in `unsent`,
  // row-major.
  int32_t len = 0;
  std::vector<T> unsent;

  // A pass's rows for positions [prefix_len, prefix_len + extend_len) ([extend_len, width]):
  // the positions not taken yet are kept (a recomputation after a retraction repeats some).
  void keep(int32_t prefix_len, int32_t extend_len, std::span<const T> rows) {
    SGL_CHECK(extend_len > 0 && rows.size() % static_cast<size_t>(extend_len) == 0)
        << rows.size() << " values for " << extend_len << " positions";
    const size_t width = rows.size() / static_cast<size_t>(extend_len);
    const int32_t skip = std::clamp(len - prefix_len, 0, extend_len);
    unsent.insert(unsent.end(), rows.begin() + static_cast<std::ptrdiff_t>(skip * width),
                  rows.end());
    len = std::max(len, prefix_len + extend_len);
  }
};

}  // namespace sgl::scheduler
