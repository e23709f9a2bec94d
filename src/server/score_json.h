// POST /v1/score (SGLang's scoring API) body -> a typed request: a query and items (text, or
// token ids), each item scored by the probabilities the model gives the label tokens right after
// query + item (or item + query). Fields for features sgl.cpp lacks are refused by name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "server/openai_types.h"

namespace sgl::server {

struct ScoreRequest {
  std::string model;
  // Per item, the sequence scored: the text query + item (item + query with item_first), which
  // the server tokenizes as a prompt, or their token ids joined.
  std::vector<PromptInput> sequences;
  std::vector<std::vector<int32_t>> label_token_ids;  // per item: distinct ids, at least one
  bool apply_softmax = false;  // scores: softmax over the labels (else each one's probability)
  double temperature = 1.0;    // of that softmax (with apply_softmax only)
  bool return_token_logprobs = false;  // also each label's log probability
};

// The body's fields as SGLang reads them (its errors' words where it has them).
Result<ScoreRequest> parse_score_request(std::string_view body);

}  // namespace sgl::server
