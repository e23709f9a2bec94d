// DraftTopK.
#include "runner/draft_top_k.h"

#include "core/check.h"
#include "kernels/copy.h"
#include "kernels/sampling.h"

namespace sgl::runner {

DraftTopK::DraftTopK(ModelRunner& target, int32_t k, int64_t max_rows)
    : target_(target),
      k_(k),
      max_rows_(max_rows),
      ids_(target.allocator(), DType::kI32, {max_rows, k}),
      logprobs_(target.allocator(), DType::kF32, {max_rows, k}) {
  if (target.options().device.is_cpu()) return;
  // The same parameters for every row: greedy, k top logprobs.
  std::vector<int64_t> block((kernels::packed_sampling_rows_bytes(max_rows) + 7) / 8, 0);
  const kernels::SamplingRows rows =
      kernels::packed_sampling_rows(block.data(), Device::cpu(), max_rows, max_rows);
  for (int64_t r = 0; r < max_rows; ++r) {
    rows.temperature.data<float>()[r] = 0.f;
    rows.top_k.data<int32_t>()[r] = 1;
    rows.top_p.data<float>()[r] = 1.f;
    rows.top_logprobs_num.data<int32_t>()[r] = k;
  }
  params_ = Buffer(target.allocator(), DType::kI64, {static_cast<int64_t>(block.size())});
  kernels::copy(Tensor(block.data(), DType::kI64, {static_cast<int64_t>(block.size())}), params_,
                target.stream());
  next_ = Buffer(target.allocator(), DType::kI32, {max_rows});
}

void DraftTopK::run(const Tensor& logits, const Tensor& ids, const Tensor& logprobs) {
  const int64_t rows = logits.size(0), vocab = logits.size(1);
  SGL_CHECK(rows <= max_rows_ && ids.numel() == rows * k_ && logprobs.numel() == rows * k_ &&
            k_ <= vocab)
      << "top " << k_ << " of " << logits.shape_string() << " into " << ids.shape_string();
  const backend::Stream stream = target_.stream();
  if (params_.tensor().defined()) {
    const kernels::SamplingRows params =
        kernels::packed_sampling_rows(params_.tensor().raw(), logits.device(), max_rows_, rows);
    kernels::sample_tokens(logits, params, {next_.tensor().slice_rows(0, rows), {}, ids, logprobs},
                           stream);
    return;
  }
  std::vector<float> host(static_cast<size_t>(rows * vocab));
  kernels::copy(logits, Tensor(host.data(), DType::kF32, {rows, vocab}), stream);
  auto* out_ids = ids.data<int32_t>();
  auto* out_logprobs = logprobs.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<speculative::TokenLogprob> top = speculative::top_k_logprobs(
        std::span<const float>(host.data() + r * vocab, static_cast<size_t>(vocab)), k_);
    for (int32_t j = 0; j < k_; ++j) {
      out_ids[r * k_ + j] = top[static_cast<size_t>(j)].token;
      out_logprobs[r * k_ + j] = top[static_cast<size_t>(j)].logprob;
    }
  }
}

std::vector<std::vector<speculative::TokenLogprob>> DraftTopK::host(
    const Tensor& logits, std::span<const int32_t> to_target) {
  const int64_t rows = logits.size(0);
  const Tensor ids = ids_.tensor().slice_rows(0, rows);
  const Tensor logprobs = logprobs_.tensor().slice_rows(0, rows);
  run(logits, ids, logprobs);
  std::vector<int32_t> host_ids(static_cast<size_t>(rows * k_));
  std::vector<float> host_logprobs(host_ids.size());
  kernels::copy(ids, Tensor(host_ids.data(), DType::kI32, {rows, k_}), target_.stream());
  kernels::copy(logprobs, Tensor(host_logprobs.data(), DType::kF32, {rows, k_}), target_.stream());
  std::vector<std::vector<speculative::TokenLogprob>> out(static_cast<size_t>(rows));
  for (size_t at = 0; at < host_ids.size(); ++at) {
    const int32_t id = host_ids[at];
    out[at / static_cast<size_t>(k_)].push_back(
        {to_target.empty() ? id : to_target[static_cast<size_t>(id)], host_logprobs[at]});
  }
  return out;
}

}  // namespace sgl::runner
