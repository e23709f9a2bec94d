// A greedy request over raw prompt ids, shared by the engine and scheduler tests.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "scheduler/req.h"

namespace sgl::test {

// Temperature 0, EOS ignored, exactly max_new generated tokens.
inline scheduler::GenerateRequest greedy_ids_request(std::vector<int32_t> prompt, int32_t max_new) {
  scheduler::GenerateRequest r;
  r.input_ids = std::move(prompt);
  r.max_new_tokens = max_new;
  r.sampling.temperature = 0.f;
  r.ignore_eos = true;
  return r;
}

}  // namespace sgl::test
