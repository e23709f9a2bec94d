// SGLang's hidden-state layouts (hidden_states_json.h).
#include "server/hidden_states_json.h"

#include <algorithm>
#include <vector>

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;

// One past the last position a choice reports a row for: the prompt's, then each output token
// fed back, which is every output token but the last.
int64_t reported_end(const ChoiceStream& c) {
  return c.prompt_tokens() + std::max(c.completion_tokens(), 1) - 1;
}

// Position `pos`'s row of `rows`, which start at position `first`.
json row(std::span<const float> rows, int64_t first, int64_t width, int64_t pos) {
  const auto at = rows.begin() + static_cast<std::ptrdiff_t>((pos - first) * width);
  return json(std::vector<float>(at, at + static_cast<std::ptrdiff_t>(width)));
}

}  // namespace

Status check_hidden_states(const ServerInfo& info, HiddenStatesMode mode) {
  if (mode == HiddenStatesMode::kNone || info.enable_return_hidden_states) {
    return Status::ok_status();
  }
  return invalid_argument(  // SGLang's words
      "The server is not configured to return the hidden states. Please set "
      "`--enable-return-hidden-states` to enable this feature.");
}

json meta_info_hidden_states(const ChoiceStream& choice, std::span<const float> rows, int64_t first,
                             int64_t width, HiddenStatesMode mode) {
  const int64_t prompt = choice.prompt_tokens();
  const int64_t last =
      std::min(first + static_cast<int64_t>(rows.size()) / width, reported_end(choice));
  if (mode == HiddenStatesMode::kLast) {
    return last > first ? row(rows, first, width, last - 1) : json(nullptr);
  }
  json out = json::array();
  if (first < std::min(prompt, last)) {
    json prompt_rows = json::array();
    for (int64_t pos = first; pos < std::min(prompt, last); ++pos) {
      prompt_rows.push_back(row(rows, first, width, pos));
    }
    out.push_back(std::move(prompt_rows));
  }
  for (int64_t pos = std::max(first, prompt); pos < last; ++pos) {
    out.push_back(row(rows, first, width, pos));
  }
  return out;
}

json choice_hidden_states(const ChoiceStream& choice, int64_t width, HiddenStatesMode mode) {
  const std::span<const float> rows = choice.total().hidden_states;
  const int64_t last = std::min(static_cast<int64_t>(rows.size()) / width, reported_end(choice));
  if (mode == HiddenStatesMode::kLast) {
    return last > 0 ? row(rows, 0, width, last - 1) : json(nullptr);
  }
  // SGLang's: the last entry of meta_info's list when it holds more than the prompt's rows.
  return last > choice.prompt_tokens() ? row(rows, 0, width, last - 1) : json::array();
}

}  // namespace sgl::server
