// Synthetic datasets: SGLang's random lengths and ShareGPT-like log-normal lengths.
#include "bench_serving/dataset.h"

#include <algorithm>
#include <cmath>

#include "bench_serving/synthetic_text.h"

namespace sgl::bench_serving {
namespace {

// ShareGPT-like lengths: the first-turn prompt and answer lengths of ShareGPT conversations are
// roughly log-normal with a long right tail. We use median 160 input / 120 output tokens with
// sigma 1.0 (means about 264 / 198), clamped to [kShareGptMinLen, kShareGptMaxLen].
constexpr double kShareGptInputMedian = 160.0;
constexpr double kShareGptOutputMedian = 120.0;
constexpr double kShareGptSigma = 1.0;
constexpr int64_t kShareGptMinLen = 4;
constexpr int64_t kShareGptMaxLen = 4096;
// Draws before a row that does not fit the context length is shrunk to fit instead.
constexpr int kShareGptMaxDraws = 64;

int64_t log_normal_length(SplitMix64& rng, double median) {
  const double x = median * std::exp(kShareGptSigma * rng.normal());
  return std::clamp<int64_t>(std::llround(x), kShareGptMinLen, kShareGptMaxLen);
}

}  // namespace

Result<DatasetName> parse_dataset_name(const std::string& name) {
  if (name == "random") return DatasetName::kRandom;
  if (name == "sharegpt-synthetic") return DatasetName::kShareGptSynthetic;
  return invalid_argument("--dataset-name expects random or sharegpt-synthetic, got '" + name +
                          "'");
}

const char* dataset_name_string(DatasetName name) {
  return name == DatasetName::kRandom ? "random" : "sharegpt-synthetic";
}

Status validate_dataset_options(const DatasetOptions& o) {
  if (o.random_input_len < 1 || o.random_output_len < 1) {
    return invalid_argument("--random-input-len and --random-output-len must be >= 1");
  }
  if (!(o.random_range_ratio >= 0.0 && o.random_range_ratio <= 1.0)) {
    return invalid_argument("--random-range-ratio must be in [0, 1]");
  }
  if (o.sharegpt_output_len && *o.sharegpt_output_len < 1) {
    return invalid_argument("--sharegpt-output-len must be >= 1");
  }
  if (o.sharegpt_context_len &&
      *o.sharegpt_context_len < kShareGptMinLen + o.sharegpt_output_len.value_or(kShareGptMinLen)) {
    return invalid_argument("--sharegpt-context-len is too small for any request");
  }
  return Status::ok_status();
}

DatasetRow SyntheticDataset::row(uint64_t index) const {
  const DatasetOptions& o = options_;
  SplitMix64 rng(o.seed, index);
  DatasetRow row;
  if (o.name == DatasetName::kRandom) {
    const auto low = [&](int64_t len) {
      return std::max<int64_t>(
          1, static_cast<int64_t>(static_cast<double>(len) * o.random_range_ratio));
    };
    row.prompt_len = rng.uniform_int(low(o.random_input_len), o.random_input_len);
    row.output_len = rng.uniform_int(low(o.random_output_len), o.random_output_len);
  } else {
    for (int draw = 0; draw < kShareGptMaxDraws; ++draw) {
      row.prompt_len = log_normal_length(rng, kShareGptInputMedian);
      row.output_len = o.sharegpt_output_len ? *o.sharegpt_output_len
                                             : log_normal_length(rng, kShareGptOutputMedian);
      if (!o.sharegpt_context_len || row.prompt_len + row.output_len <= *o.sharegpt_context_len) {
        break;
      }
    }
    if (o.sharegpt_context_len && row.prompt_len + row.output_len > *o.sharegpt_context_len) {
      row.output_len = std::min(row.output_len, *o.sharegpt_context_len - kShareGptMinLen);
      row.prompt_len = *o.sharegpt_context_len - row.output_len;
    }
  }
  row.prompt = synthetic_text(row.prompt_len, rng);
  return row;
}

}  // namespace sgl::bench_serving
