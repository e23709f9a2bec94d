// ScheduleBatch -> ExecBatch.
#include "engine/exec_batch.h"

#include <algorithm>

#include "core/check.h"

namespace sgl::engine {
namespace {

// The first `n` tokens of the request's sequence (prompt, then outputs).
std::vector<int32_t> sequence_prefix(const scheduler::Req& req, int32_t n) {
  const std::vector<int32_t>& prompt = req.origin_input_ids();
  std::vector<int32_t> ids(prompt.begin(), prompt.begin() + std::min<size_t>(n, prompt.size()));
  for (size_t i = 0; static_cast<int32_t>(ids.size()) < n && i < req.output_ids.size(); ++i) {
    ids.push_back(req.output_ids[i]);
  }
  SGL_CHECK_EQ(static_cast<int32_t>(ids.size()), n) << "prefix past the known tokens";
  return ids;
}

// The request's token at `pos` (prompt, then outputs); -1 past the known tokens.
int32_t token_at(const scheduler::Req& req, int32_t pos) {
  const std::vector<int32_t>& prompt = req.origin_input_ids();
  const auto p = static_cast<size_t>(pos);
  if (p < prompt.size()) return prompt[p];
  return p - prompt.size() < req.output_ids.size() ? req.output_ids[p - prompt.size()] : -1;
}

}  // namespace

runner::ExecBatch to_exec_batch(const scheduler::ScheduleBatch& batch,
                                std::span<const int32_t> eos_token_ids) {
  runner::ExecBatch exec;
  exec.id = batch.id;
  exec.mode = batch.mode;
  exec.pooling = batch.pooling;
  exec.out_cache_loc = batch.out_cache_loc;
  exec.req_to_token_writes = batch.req_to_token_writes;
  exec.vocab_mask = batch.vocab_mask;
  exec.skip_draft = batch.skip_draft;
  exec.requests.reserve(batch.entries.size());
  for (const scheduler::BatchEntry& e : batch.entries) {
    const scheduler::GenerateRequest& r = e.req->request;
    runner::ExecRequest x{e.req->req_pool_idx, e.prefix_len,       e.extend_len,    e.input_ids,
                          r.sampling,          r.top_logprobs_num, r.return_logprob};
    x.prompt_len = e.req->prompt_len();
    x.samples = e.samples;
    if (!e.samples) x.next_input_id = token_at(*e.req, e.prefix_len + e.extend_len);
    x.sample_rows = e.sample_rows();
    const sampling::SamplingParams& p = r.sampling;
    // NOTE: in the overlap loop output_ids may lag the scheduled steps; the mask then stays on
    // a step longer than needed, which the processor resolves from the true count.
    const bool before_min_tokens =
        static_cast<int64_t>(e.req->output_ids.size()) < p.min_new_tokens;
    x.process_logits = p.has_penalties_or_bias() || before_min_tokens;
    if (p.has_penalties() && !e.input_ids.empty() && e.prefix_len > 0) {
      // Penalties read the request's whole sequence from the runner's token table.
      x.cached_prefix_ids = sequence_prefix(*e.req, e.prefix_len);
    }
    if (before_min_tokens) {
      x.min_tokens_stop_ids.assign(eos_token_ids.begin(), eos_token_ids.end());
      x.min_tokens_stop_ids.insert(x.min_tokens_stop_ids.end(), r.stop_token_ids.begin(),
                                   r.stop_token_ids.end());
    }
    x.logprob_begin = e.logprob_begin;
    x.logprob_targets = e.logprob_targets;
    if (e.req->wants_token_ids_logprobs()) x.token_ids_logprob = r.token_ids_logprob;
    x.return_hidden_states = r.return_hidden_states;
    x.return_routed_experts = r.return_routed_experts;
    x.lora_id = r.lora_id;
    exec.requests.push_back(std::move(x));
  }
  return exec;
}

}  // namespace sgl::engine
