// ScheduleBatch -> ExecBatch.
#include "engine/exec_batch.h"

namespace sgl::engine {

runner::ExecBatch to_exec_batch(const scheduler::ScheduleBatch& batch) {
  runner::ExecBatch exec;
  exec.id = batch.id;
  exec.mode = batch.mode;
  exec.requests.reserve(batch.entries.size());
  for (const scheduler::BatchEntry& e : batch.entries) {
    const scheduler::GenerateRequest& r = e.req->request;
    exec.requests.push_back({e.req->req_pool_idx, e.prefix_len, e.extend_len, e.input_ids,
                             e.out_cache_loc, r.sampling, r.top_logprobs_num, r.return_logprob});
  }
  return exec;
}

}  // namespace sgl::engine
