// GenerationJob and the --batch-file JSONL reader of sgl-generate.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/generate_request.h"

namespace sgl::app {

// One request as a user wrote it: text or ids, sampling, stops.
struct GenerationJob {
  std::optional<std::string> prompt;  // tokenized by the caller when set
  engine::GenerateRequest request;    // input_ids set when the job gave prompt_ids
  std::vector<std::string> stop;      // stop strings
};

// Each non-empty line: {"prompt": str | "prompt_ids": [int], "max_new_tokens", "temperature",
// "top_k", "top_p", "min_p", "seed", "ignore_eos", "stop": str | [str], "stop_token_ids",
// "top_logprobs"}. Errors name the line.
Result<std::vector<GenerationJob>> read_batch_file(const std::filesystem::path& path);

}  // namespace sgl::app
