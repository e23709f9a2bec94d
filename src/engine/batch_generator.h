// BatchGenerator: runs a fixed set of requests to completion together (one prefill batch, then
// decode batches of every unfinished request). The continuous-batching Scheduler supersedes it
// for serving; this is the simple loop the foundation and sgl-generate use.
#pragma once

#include <vector>

#include "cache/req_to_token_pool.h"
#include "cache/token_to_kv_pool_allocator.h"
#include "engine/generate_request.h"
#include "runner/forward_batch_builder.h"
#include "runner/model_runner.h"

namespace sgl::engine {

class BatchGenerator {
 public:
  // Borrows `runner`. `eos_token_ids` end generation unless a request sets ignore_eos.
  BatchGenerator(runner::ModelRunner& runner, std::vector<int32_t> eos_token_ids);

  // Validates every request first (nothing runs if one is bad), then generates. Requests that
  // do not fit the KV pool together give kResourceExhausted.
  Result<std::vector<GenerateResult>> generate(const std::vector<GenerateRequest>& requests);

  // KV memory is returned after every call; these let tests check that.
  const cache::TokenToKvPoolAllocator& kv_allocator() const { return kv_allocator_; }
  const cache::ReqToTokenPool& req_to_token_pool() const { return req_to_token_; }

 private:
  struct Running;
  Status validate(const GenerateRequest& request) const;
  void prefill(std::vector<Running>& running);
  void decode(std::vector<Running*>& active);
  void record(Running& r, const sampling::SampleOutput& out, size_t row);
  static void add_to_sampling_batch(const Running& r, int64_t position,
                                    sampling::SamplingBatch& batch);

  runner::ModelRunner& runner_;
  std::vector<int32_t> eos_token_ids_;
  cache::ReqToTokenPool req_to_token_;
  cache::TokenToKvPoolAllocator kv_allocator_;
  runner::ForwardBatchBuilder builder_;
};

}  // namespace sgl::engine
