// SGLang's routed_experts layout (routed_experts_json.h).
#include "server/routed_experts_json.h"

#include <algorithm>
#include <bit>
#include <vector>

#include "core/base64.h"

namespace sgl::server {

Status check_routed_experts(const ServerInfo& info, const RoutedExpertsInput& asked,
                            int64_t prompt_len) {
  if (!asked.asked) return Status::ok_status();
  if (info.routed_experts.num_layers == 0) {
    return invalid_argument(
        "'return_routed_experts' needs a Mixture-of-Experts model served with "
        "--enable-return-routed-experts");
  }
  if (asked.start_len > prompt_len) {
    return invalid_argument("'routed_experts_start_len' (" + std::to_string(asked.start_len) +
                            ") is higher than the number of input tokens (" +
                            std::to_string(prompt_len) + ")");
  }
  return Status::ok_status();
}

std::string routed_experts_base64(std::span<const int32_t> ids, const RoutedExpertsLayout& layout,
                                  int64_t start, int64_t end) {
  const auto sparse = static_cast<int64_t>(layout.sparse_layers.size());
  const int64_t per_position = sparse * layout.top_k;
  const int64_t available = per_position > 0 ? static_cast<int64_t>(ids.size()) / per_position : 0;
  end = std::min(end, available);
  std::string bytes;
  const int64_t rows = std::max<int64_t>(end - start, 0);
  bytes.reserve(static_cast<size_t>(rows * layout.num_layers * layout.top_k * 4));
  std::vector<int32_t> position(static_cast<size_t>(layout.num_layers * layout.top_k));
  for (int64_t pos = start; pos < end; ++pos) {
    std::fill(position.begin(), position.end(), 0);
    for (int64_t s = 0; s < sparse; ++s) {
      const auto from =
          ids.begin() + static_cast<std::ptrdiff_t>(pos * per_position + s * layout.top_k);
      std::copy(
          from, from + layout.top_k,
          position.begin() + static_cast<std::ptrdiff_t>(layout.sparse_layers[s] * layout.top_k));
    }
    for (const int32_t id : position) {
      const auto bits = std::bit_cast<uint32_t>(id);
      for (int shift = 0; shift < 32; shift += 8) bytes.push_back(static_cast<char>(bits >> shift));
    }
  }
  return base64_encode(bytes);
}

std::string choice_routed_experts(const ChoiceStream& choice, const RoutedExpertsLayout& layout,
                                  int64_t start_len) {
  return routed_experts_base64(choice.total().routed_experts, layout, start_len,
                               choice.prompt_tokens() + choice.completion_tokens() - 1);
}

}  // namespace sgl::server
