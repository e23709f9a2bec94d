// ModelBatchRunner.
#include "runner/model_batch_runner.h"

#include <algorithm>

namespace sgl::runner {

ModelBatchRunner::ModelBatchRunner(ModelRunner& model_runner,
                                   const cache::ReqToTokenPool& req_to_token)
    : model_runner_(model_runner),
      context_len_(req_to_token.max_context_len()),
      token_table_(static_cast<size_t>(req_to_token.size()) * req_to_token.max_context_len(), 0),
      builder_(model_runner.allocator(), model_runner.options().max_num_tokens,
               model_runner.options().max_batch_size, req_to_token) {}

ExecResult ModelBatchRunner::run(const ExecBatch& batch) {
  std::vector<BatchRequest> requests;
  requests.reserve(batch.requests.size());
  sampling::SamplingBatch sampling;
  input_ids_.clear();
  for (const ExecRequest& r : batch.requests) {
    int32_t* row = token_row(r.req_pool_idx);
    SGL_CHECK_LE(r.prefix_len + r.extend_len, context_len_);
    if (!r.input_ids.empty()) {
      SGL_CHECK_EQ(static_cast<int32_t>(r.input_ids.size()), r.extend_len);
      std::copy(r.input_ids.begin(), r.input_ids.end(), row + r.prefix_len);
    }
    input_ids_.insert(input_ids_.end(), row + r.prefix_len, row + r.prefix_len + r.extend_len);
    sampling.params.push_back(r.sampling);
    sampling.steps.push_back(static_cast<uint64_t>(r.prefix_len + r.extend_len));
    sampling.top_logprobs_num.push_back(r.top_logprobs_num);
    sampling.return_logprob = sampling.return_logprob || r.return_logprob;
  }
  size_t offset = 0;
  for (const ExecRequest& r : batch.requests) {
    requests.push_back({r.req_pool_idx, r.prefix_len,
                        std::span<const int32_t>(input_ids_.data() + offset, r.extend_len),
                        r.out_cache_loc});
    offset += r.extend_len;
  }
  const ForwardBatch fb =
      builder_.build(batch.mode, LogitsMode::kLastPerRequest, requests, model_runner_.stream());
  ExecResult result{batch.id, model_runner_.forward_and_sample(fb, sampling)};
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    const ExecRequest& r = batch.requests[i];
    const int32_t next_pos = r.prefix_len + r.extend_len;
    if (next_pos < context_len_)
      token_row(r.req_pool_idx)[next_pos] = result.output.next_token_ids[i];
  }
  return result;
}

}  // namespace sgl::runner
