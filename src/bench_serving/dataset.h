// The benchmark's requests: synthetic prompts with controlled input and output lengths.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace sgl::bench_serving {

enum class DatasetName {
  // SGLang's `random`: input length uniform in [max(1, input_len * ratio), input_len], output
  // length uniform in [max(1, output_len * ratio), output_len].
  kRandom,
  // ShareGPT-like lengths without the ShareGPT file: log-normal input and output lengths
  // (see kShareGpt* in dataset.cpp), resampled until input + output fits the context length.
  kShareGptSynthetic,
};

Result<DatasetName> parse_dataset_name(const std::string& name);
const char* dataset_name_string(DatasetName name);

struct DatasetOptions {
  DatasetName name = DatasetName::kRandom;
  int64_t random_input_len = 1024;
  int64_t random_output_len = 1024;
  double random_range_ratio = 0.0;
  std::optional<int64_t> sharegpt_output_len;   // fixes every output length
  std::optional<int64_t> sharegpt_context_len;  // input + output must fit (ShareGPT-synthetic)
  uint64_t seed = 1;
};

Status validate_dataset_options(const DatasetOptions& options);

struct DatasetRow {
  std::string prompt;
  int64_t prompt_len = 0;  // in words, which is the token count for one-token words
  int64_t output_len = 0;  // max_tokens to ask for
};

// Row i is a pure function of (options, i): the same seed gives the same requests however
// many are drawn, which lets a --duration run draw as many as it needs.
class SyntheticDataset {
 public:
  explicit SyntheticDataset(DatasetOptions options) : options_(std::move(options)) {}
  DatasetRow row(uint64_t index) const;
  const DatasetOptions& options() const { return options_; }

 private:
  DatasetOptions options_;
};

}  // namespace sgl::bench_serving
