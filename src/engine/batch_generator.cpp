// BatchGenerator: prefill everything, then decode until every request finishes.
#include "engine/batch_generator.h"

#include <algorithm>
#include <random>

namespace sgl::engine {

struct BatchGenerator::Running {
  const GenerateRequest* request = nullptr;
  GenerateResult result;
  int32_t req_pool_idx = -1;
  std::vector<int32_t> slots;  // KV slots of every token so far
  sampling::SamplingParams params;
  bool finished = false;
};

BatchGenerator::BatchGenerator(runner::ModelRunner& runner, std::vector<int32_t> eos_token_ids)
    : runner_(runner),
      eos_token_ids_(std::move(eos_token_ids)),
      req_to_token_(static_cast<int32_t>(runner.options().max_batch_size),
                    static_cast<int32_t>(runner.context_length())),
      kv_allocator_(static_cast<int32_t>(runner.num_kv_slots())),
      builder_(runner.allocator(), runner.options().max_num_tokens, runner.options().max_batch_size,
               req_to_token_.table()) {}

Status BatchGenerator::validate(const GenerateRequest& r) const {
  SGL_RETURN_IF_ERROR(r.sampling.validate());
  if (r.input_ids.empty()) return invalid_argument("the prompt is empty");
  if (r.max_new_tokens < 0) return invalid_argument("max_new_tokens must be >= 0");
  const int64_t vocab = runner_.config().vocab_size;
  for (int32_t id : r.input_ids) {
    if (id < 0 || id >= vocab) {
      return invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                              std::to_string(vocab) + ")");
    }
  }
  if (static_cast<int64_t>(r.token_ids_logprob.size()) > sampling::kMaxTokenIdsLogprob) {
    return invalid_argument("token_ids_logprob may list at most " +
                            std::to_string(sampling::kMaxTokenIdsLogprob) + " token ids");
  }
  for (int32_t id : r.token_ids_logprob) {
    if (id < 0 || id >= vocab) {
      return invalid_argument("token_ids_logprob: token id " + std::to_string(id) +
                              " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    }
  }
  const int64_t total = static_cast<int64_t>(r.input_ids.size()) + r.max_new_tokens;
  if (total > runner_.context_length()) {
    return invalid_argument("prompt (" + std::to_string(r.input_ids.size()) +
                            " tokens) + max_new_tokens (" + std::to_string(r.max_new_tokens) +
                            ") exceeds the context length " +
                            std::to_string(runner_.context_length()));
  }
  if (static_cast<int64_t>(r.input_ids.size()) > runner_.options().max_num_tokens) {
    return invalid_argument("prompt of " + std::to_string(r.input_ids.size()) +
                            " tokens exceeds max_num_tokens " +
                            std::to_string(runner_.options().max_num_tokens));
  }
  return Status::ok_status();
}

// Appends `r`'s sampling state for the token at `position` (the RNG counter).
void BatchGenerator::add_to_sampling_batch(const Running& r, int64_t position,
                                           sampling::SamplingBatch& batch) {
  batch.params.push_back(r.params);
  batch.steps.push_back(static_cast<uint64_t>(position));
  batch.top_logprobs_num.push_back(r.request->top_logprobs_num);
  batch.return_logprob =
      batch.return_logprob || r.request->return_logprob || r.request->top_logprobs_num > 0;
  batch.token_ids_logprob.push_back(r.request->return_logprob ? r.request->token_ids_logprob
                                                              : std::vector<int32_t>{});
}

void BatchGenerator::record(Running& r, const sampling::SampleOutput& out, size_t row) {
  const int32_t id = out.next_token_ids[row];
  r.result.output_ids.push_back(id);
  if (r.request->return_logprob) r.result.output_logprobs.push_back(out.next_token_logprobs[row]);
  if (r.request->top_logprobs_num > 0) r.result.top_logprobs.push_back(out.top_logprobs[row]);
  if (r.request->return_logprob && !r.request->token_ids_logprob.empty()) {
    r.result.token_ids_logprobs.push_back(out.token_ids_logprobs.at(row));
  }
  const auto& stop = r.request->stop_token_ids;
  const bool is_eos =
      std::find(eos_token_ids_.begin(), eos_token_ids_.end(), id) != eos_token_ids_.end();
  if ((!r.request->ignore_eos && is_eos) || std::find(stop.begin(), stop.end(), id) != stop.end()) {
    r.finished = true;
    r.result.finish_reason = FinishReason::kStop;
  } else if (static_cast<int32_t>(r.result.output_ids.size()) >= r.request->max_new_tokens) {
    r.finished = true;
    r.result.finish_reason = FinishReason::kLength;
  }
}

Result<std::vector<GenerateResult>> BatchGenerator::generate(
    const std::vector<GenerateRequest>& requests) {
  for (size_t i = 0; i < requests.size(); ++i) {
    SGL_RETURN_IF_ERROR(validate(requests[i]).with_context("request " + std::to_string(i)));
  }
  if (static_cast<int64_t>(requests.size()) > runner_.options().max_batch_size) {
    return resource_exhausted("more requests than max_batch_size");
  }
  int64_t needed = 0;
  for (const auto& r : requests)
    needed += static_cast<int64_t>(r.input_ids.size()) + r.max_new_tokens;
  if (needed > kv_allocator_.available()) {
    return resource_exhausted("requests need " + std::to_string(needed) + " KV slots, " +
                              std::to_string(kv_allocator_.available()) + " are free");
  }

  std::vector<Running> running(requests.size());
  std::random_device entropy;
  for (size_t i = 0; i < requests.size(); ++i) {
    Running& r = running[i];
    r.request = &requests[i];
    r.params = requests[i].sampling;
    if (!r.params.seed) r.params.seed = (static_cast<uint64_t>(entropy()) << 32) | entropy();
    r.req_pool_idx = *req_to_token_.alloc();
    r.finished = requests[i].max_new_tokens == 0;
  }
  prefill(running);
  std::vector<Running*> active;
  for (auto& r : running) {
    if (!r.finished) active.push_back(&r);
  }
  while (!active.empty()) decode(active);

  std::vector<GenerateResult> results;
  for (Running& r : running) {
    kv_allocator_.free(r.slots);
    req_to_token_.free(r.req_pool_idx);
    results.push_back(std::move(r.result));
  }
  return results;
}

void BatchGenerator::prefill(std::vector<Running>& running) {
  // Prefill in groups that fit max_num_tokens.
  const int64_t budget = runner_.options().max_num_tokens;
  size_t begin = 0;
  while (begin < running.size()) {
    std::vector<runner::BatchRequest> batch;
    sampling::SamplingBatch sampling;
    int64_t tokens = 0;
    size_t end = begin;
    for (; end < running.size(); ++end) {
      Running& r = running[end];
      const auto n = static_cast<int64_t>(r.request->input_ids.size());
      if (!batch.empty() && tokens + n > budget) break;
      tokens += n;
      r.slots = *kv_allocator_.alloc(static_cast<int32_t>(n));
      req_to_token_.write(r.req_pool_idx, 0, r.slots);
      batch.push_back({r.req_pool_idx, 0, r.request->input_ids, r.slots});
      add_to_sampling_batch(r, n, sampling);
    }
    const ForwardBatch fb =
        builder_.build(ForwardMode::kExtend, LogitsMode::kLastPerRequest, batch, runner_.stream());
    const sampling::SampleOutput out = runner_.forward_and_sample(fb, sampling);
    for (size_t i = begin; i < end; ++i) {
      if (!running[i].finished) record(running[i], out, i - begin);
    }
    begin = end;
  }
}

void BatchGenerator::decode(std::vector<Running*>& active) {
  std::vector<runner::BatchRequest> batch;
  std::vector<int32_t> new_slots(active.size());
  sampling::SamplingBatch sampling;
  for (size_t i = 0; i < active.size(); ++i) {
    Running& r = *active[i];
    const auto pos = static_cast<int32_t>(r.slots.size());
    r.slots.push_back((*kv_allocator_.alloc(1))[0]);
    req_to_token_.write(r.req_pool_idx, pos, std::span<const int32_t>(&r.slots.back(), 1));
    batch.push_back({r.req_pool_idx, pos, std::span<const int32_t>(&r.result.output_ids.back(), 1),
                     std::span<const int32_t>(&r.slots.back(), 1)});
    add_to_sampling_batch(r, pos + 1, sampling);
  }
  const ForwardBatch fb =
      builder_.build(ForwardMode::kDecode, LogitsMode::kLastPerRequest, batch, runner_.stream());
  const sampling::SampleOutput out = runner_.forward_and_sample(fb, sampling);
  for (size_t i = 0; i < active.size(); ++i) record(*active[i], out, i);
  std::erase_if(active, [](const Running* r) { return r->finished; });
}

}  // namespace sgl::engine
