// DeviceSampler: pack parameters, one upload, the sampling kernels, one download.
#include "runner/device_sampler.h"

#include <algorithm>
#include <bit>

#include "backend/backend.h"
#include "kernels/copy.h"
#include "kernels/sampling.h"

namespace sgl::runner {
namespace {

constexpr int64_t kTop = kernels::kMaxTopLogprobs;

// Offsets (in 32-bit words) of the result arrays in a block for `capacity` rows.
struct ResultLayout {
  int64_t ids = 0, logprobs, top_ids, top_logprobs, words;
  explicit ResultLayout(int64_t capacity)
      : logprobs(capacity),
        top_ids(2 * capacity),
        top_logprobs((2 + kTop) * capacity),
        words((2 + 2 * kTop) * capacity) {}
};

kernels::SampledTokens result_views(const Buffer& block, int64_t capacity, int64_t bs,
                                    bool logprobs, bool top) {
  const ResultLayout at(capacity);
  auto* base = static_cast<int32_t*>(block.tensor().raw());
  const Device device = block.tensor().device();
  kernels::SampledTokens out;
  out.next_token_ids = Tensor(base + at.ids, DType::kI32, {bs}, device);
  if (logprobs) out.next_token_logprobs = Tensor(base + at.logprobs, DType::kF32, {bs}, device);
  if (top) {
    out.top_logprob_ids = Tensor(base + at.top_ids, DType::kI32, {bs, kTop}, device);
    out.top_logprobs = Tensor(base + at.top_logprobs, DType::kF32, {bs, kTop}, device);
  }
  return out;
}

}  // namespace

DeviceSampler::DeviceSampler(Allocator& allocator, Allocator& pinned, int64_t capacity)
    : capacity_(capacity) {
  const int64_t param_words = (kernels::packed_sampling_rows_bytes(capacity) + 3) / 4;
  params_host_ = Buffer(pinned, DType::kI32, {param_words});
  params_device_ = Buffer(allocator, DType::kI32, {param_words});
  const ResultLayout layout(capacity);
  results_host_ = Buffer(pinned, DType::kI32, {layout.words});
  results_device_ = Buffer(allocator, DType::kI32, {layout.words});
}

DeviceSampler::~DeviceSampler() = default;

bool DeviceSampler::supports(const sampling::SamplingBatch& batch) {
  return std::all_of(batch.top_logprobs_num.begin(), batch.top_logprobs_num.end(),
                     [](int32_t k) { return k <= kTop; });
}

sampling::SampleOutput DeviceSampler::sample(const Tensor& logits,
                                             const sampling::SamplingBatch& batch,
                                             backend::Stream stream) {
  const auto bs = static_cast<int64_t>(batch.size());
  SGL_CHECK(bs <= capacity_ && logits.size(0) == bs) << "device sampling of " << bs << " rows";
  const bool top = std::any_of(batch.top_logprobs_num.begin(), batch.top_logprobs_num.end(),
                               [](int32_t k) { return k > 0; });
  const bool logprobs = batch.return_logprob || top;

  // Parameters: filled in pinned memory, uploaded in one copy.
  const kernels::SamplingRows host =
      kernels::packed_sampling_rows(params_host_.tensor().raw(), Device::cpu(), capacity_, bs);
  for (int64_t b = 0; b < bs; ++b) {
    const sampling::SamplingParams& p = batch.params[b];
    SGL_CHECK(p.is_greedy() || p.seed.has_value())
        << "device sampler: request " << b << " has no seed";
    host.temperature.data<float>()[b] = p.temperature;
    host.top_k.data<int32_t>()[b] = p.top_k;
    host.top_p.data<float>()[b] = p.top_p;
    host.min_p.data<float>()[b] = p.min_p;
    host.seed.data<int64_t>()[b] = std::bit_cast<int64_t>(p.seed.value_or(0));
    host.step.data<int64_t>()[b] = std::bit_cast<int64_t>(batch.steps[b]);
    host.top_logprobs_num.data<int32_t>()[b] = batch.top_logprobs_num[b];
  }
  kernels::copy(params_host_, params_device_, stream);
  const kernels::SamplingRows rows = kernels::packed_sampling_rows(
      params_device_.tensor().raw(), params_device_.tensor().device(), capacity_, bs);
  kernels::sample_tokens(logits, rows, result_views(results_device_, capacity_, bs, logprobs, top),
                         stream);

  // Results: one download (the ids and logprobs, plus the top-k block when asked for).
  const ResultLayout at(capacity_);
  const int64_t words = top ? at.words : at.top_ids;
  kernels::copy(results_device_.tensor().slice_rows(0, words),
                results_host_.tensor().slice_rows(0, words), stream);
  const kernels::SampledTokens got = result_views(results_host_, capacity_, bs, logprobs, top);
  sampling::SampleOutput out;
  const int32_t* ids = got.next_token_ids.data<int32_t>();
  out.next_token_ids.assign(ids, ids + bs);
  if (logprobs) {
    const float* lp = got.next_token_logprobs.data<float>();
    out.next_token_logprobs.assign(lp, lp + bs);
    out.top_logprobs.resize(bs);
  }
  if (top) {
    for (int64_t b = 0; b < bs; ++b) {
      const int32_t k = std::min<int32_t>(batch.top_logprobs_num[b], kTop);
      for (int32_t i = 0; i < k; ++i) {
        const int32_t id = got.top_logprob_ids.data<int32_t>()[b * kTop + i];
        if (id < 0) break;
        out.top_logprobs[b].push_back({id, got.top_logprobs.data<float>()[b * kTop + i]});
      }
    }
  }
  return out;
}

}  // namespace sgl::runner
