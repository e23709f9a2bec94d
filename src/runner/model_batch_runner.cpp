// ModelBatchRunner.
#include "runner/model_batch_runner.h"

#include <algorithm>
#include <utility>

#include "core/logging.h"
#include "kernels/copy.h"
#include "runner/eagle_chain_accept.h"
#include "sampling/nan_logits.h"
#include "speculative/draft_acceptance.h"

namespace sgl::runner {

ModelBatchRunner::ModelBatchRunner(ModelRunner& model_runner,
                                   const cache::ReqToTokenPool& req_to_token,
                                   EagleDraftRunner* eagle_draft, int32_t bench_accept_length)
    : model_runner_(model_runner),
      context_len_(req_to_token.max_context_len()),
      req_to_token_(req_to_token.size(), req_to_token.max_context_len()),
      builder_(model_runner.allocator(), model_runner.options().max_num_tokens,
               model_runner.options().max_batch_size, req_to_token_),
      bench_accept_length_(bench_accept_length),
      token_table_(static_cast<size_t>(req_to_token.size()) * req_to_token.max_context_len(), 0),
      pending_batch_(req_to_token.size(), -1),
      pending_index_(req_to_token.size(), 0) {
  if (eagle_draft != nullptr) {
    SGL_CHECK(&eagle_draft->target() == &model_runner) << "an EAGLE draft of another target";
    eagle_ = std::make_unique<EagleWorker>(*eagle_draft, req_to_token_, req_to_token.size());
  }
}

void ModelBatchRunner::launch(const ExecBatch& batch) {
  req_to_token_.apply(batch.req_to_token_writes);
  // A batch the draft skips runs as without it (hidden states, drafts and extend left out).
  const bool eagle = eagle_ != nullptr && !batch.skip_draft;
  // EAGLE: the verify entries' drafts, before their ids are read (the launch before extended
  // the draft over its batch: the draft state is current).
  std::vector<speculative::DraftTree> drafts;
  if (eagle) drafts = eagle_->draft(batch);
  // One sampling row per sampled position: a request's last sample_rows positions, each drawn
  // with its own position's step (a tree node's: its depth's).
  sampling::SamplingBatch sampling;
  bool process = false, score_prompt = false, verify = false, token_ids = false, trees = false,
       hidden = false, routed = false, lora = false;
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    const ExecRequest& r = batch.requests[i];
    const bool tree = !drafts.empty() && !drafts[i].depths.empty();
    trees = trees || tree;
    for (int32_t k = r.sample_rows; k >= 1; --k) {
      const int32_t node = r.sample_rows - k;  // a tree's node (0: the root)
      const int32_t pos = tree ? r.prefix_len + (node == 0 ? 0 : drafts[i].depths[node - 1])
                               : r.prefix_len + r.extend_len - k;
      sampling.params.push_back(r.sampling);
      sampling.steps.push_back(static_cast<uint64_t>(pos + 1));
      sampling.top_logprobs_num.push_back(r.top_logprobs_num);
    }
    sampling.return_logprob = sampling.return_logprob || r.return_logprob;
    process = process || r.process_logits;
    score_prompt = score_prompt || !r.logprob_targets.empty();
    verify = verify || r.sample_rows > 1;
    token_ids = token_ids || !r.token_ids_logprob.empty();
    hidden = hidden || r.return_hidden_states;
    routed = routed || r.return_routed_experts;
    lora = lora || r.lora_id != 0;
  }
  if (token_ids) {  // per row, only when some request asks (the host and device samplers both)
    for (const ExecRequest& r : batch.requests) {
      for (int32_t k = r.sample_rows; k >= 1; --k) {
        sampling.token_ids_logprob.push_back(r.token_ids_logprob);
      }
    }
  }
  // A pooling batch samples nothing and runs to its end here, as host-sampled batches do.
  const bool pooling = batch.pooling != PoolingType::kNone;
  const bool nan_detection = model_runner_.options().enable_nan_detection;
  const bool on_host = pooling || process || score_prompt || verify || eagle || hidden || routed ||
                       nan_detection || !model_runner_.can_launch(sampling);
  Launched launched;
  launched.result.batch_id = batch.id;
  {
    std::unique_lock lock(mutex_);
    // A batch sampled on the host reads the token table (logit processing) and its decode
    // requests' last tokens there: every batch before it must be finished. A device launch may
    // follow one unfinished batch (the device sampler's two slots).
    batch_finished_.wait(lock, [&] { return unfinished_.size() < (on_host ? 1u : 2u); });
    input_ids_.clear();
    for (size_t i = 0; i < batch.requests.size(); ++i) {
      const ExecRequest& r = batch.requests[i];
      int32_t* row = token_row(r.req_pool_idx);
      SGL_CHECK_LE(r.prefix_len + r.extend_len, context_len_);
      if (!r.input_ids.empty()) {
        SGL_CHECK_EQ(static_cast<int32_t>(r.input_ids.size()), r.extend_len);
        std::copy(r.input_ids.begin(), r.input_ids.end(), row + r.prefix_len);
      }
      if (!drafts.empty() && !drafts[i].tokens.empty()) {  // over the placeholders
        std::copy(drafts[i].tokens.begin(), drafts[i].tokens.end(), row + r.prefix_len + 1);
      }
      if (!r.cached_prefix_ids.empty()) {
        SGL_CHECK_EQ(static_cast<int32_t>(r.cached_prefix_ids.size()), r.prefix_len);
        std::copy(r.cached_prefix_ids.begin(), r.cached_prefix_ids.end(), row);
      }
      if (r.input_ids.empty() && pending_batch_[r.req_pool_idx] >= 0) {
        // Its last token is still on the device, sampled by the unfinished batch before.
        SGL_CHECK_EQ(r.extend_len, 1);
        input_ids_.push_back(sampled_id_ref(pending_index_[r.req_pool_idx]));
      } else {
        input_ids_.insert(input_ids_.end(), row + r.prefix_len, row + r.prefix_len + r.extend_len);
      }
      for (int32_t k = r.sample_rows; k >= 1; --k) {
        launched.rows.push_back(r.req_pool_idx);
        launched.next_pos.push_back(r.samples && !pooling ? r.prefix_len + r.extend_len - k + 1
                                                          : -1);
      }
    }
  }
  SGL_CHECK_EQ(batch.out_cache_loc.size(), input_ids_.size());
  std::vector<BatchRequest> requests;
  requests.reserve(batch.requests.size());
  // A tree verify's nodes sit at their depths' positions and see their ancestors only.
  std::vector<std::vector<int32_t>> tree_positions(trees ? batch.requests.size() : 0);
  std::vector<std::vector<uint64_t>> tree_masks(trees ? batch.requests.size() : 0);
  size_t offset = 0;
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    const ExecRequest& r = batch.requests[i];
    requests.push_back(
        {r.req_pool_idx, r.prefix_len,
         std::span<const int32_t>(input_ids_.data() + offset, r.extend_len),
         std::span<const int32_t>(batch.out_cache_loc.data() + offset, r.extend_len)});
    offset += r.extend_len;
    if (trees && !drafts[i].depths.empty()) {
      SGL_CHECK_EQ(static_cast<int32_t>(drafts[i].tokens.size()) + 1, r.extend_len);
      tree_positions[i].push_back(r.prefix_len);
      for (int32_t d : drafts[i].depths) tree_positions[i].push_back(r.prefix_len + d);
      tree_masks[i] = speculative::tree_mask(drafts[i].parents);
      requests.back().positions = tree_positions[i];
      requests.back().tree_mask = tree_masks[i];
    }
  }
  // Prompt logprobs and verify entries need logits rows past each request's last.
  // NOTE: the LM head then runs over the other requests' tokens too; only such batches pay.
  const LogitsMode logits_mode =
      score_prompt || verify ? LogitsMode::kAllTokens : LogitsMode::kLastPerRequest;
  ForwardBatch fb = builder_.build(batch.mode, logits_mode, requests, model_runner_.stream());
  fb.pooling = batch.pooling;
  if (eagle || hidden) fb.capture_hidden_mode = CaptureHiddenMode::kFull;
  fb.reads_routed_experts = routed;
  if (lora) {
    lora_ids_.clear();
    for (const ExecRequest& r : batch.requests) lora_ids_.push_back(r.lora_id);
    fb.lora_ids_host = lora_ids_;
  }
  if (eagle) fb.id_ref_table = eagle_->draft_id_table();
  if (pooling) {
    const Tensor pooled = model_runner_.forward_embeddings(fb);
    const float* data = pooled.data<float>();
    launched.result.embeddings.assign(data, data + pooled.numel());
    std::lock_guard lock(mutex_);
    unfinished_.push_back(std::move(launched));
    return;
  }
  if (on_host) {
    // Sampled now. Speculative batches (their draft extend and next drafts need the ids) on the
    // device when each logits row is a sampled row (decodes and verifies) and nothing needs
    // host logits.
    model::ModelOutput output;
    const bool rows_sampled = fb.num_logit_rows() == static_cast<int32_t>(sampling.size());
    std::optional<ModelRunner::LaunchedSample> ticket;
    if ((eagle || verify) && !process && !score_prompt && !nan_detection && rows_sampled &&
        model_runner_.can_launch(sampling) && (!batch.vocab_mask.valid() || !verify)) {
      ticket = model_runner_.launch_forward_and_sample(
          fb, sampling, batch.vocab_mask.valid() ? &batch.vocab_mask : nullptr, &output);
    } else {
      run_on_host(batch, fb, sampling, process, score_prompt || verify, launched.result, &output);
    }
    if (hidden) {
      launched.result.hidden_states = requested_hidden_states(batch, fb, output.hidden_states);
    }
    if (routed) {
      launched.result.routed_experts = requested_routed_experts(batch, fb, output.routed_experts);
    }
    // EAGLE chain verifies queue the draft extend and the next drafts right behind the verify,
    // the accept counts computed where the sampled ids are (on the GPU: before they come back).
    bool queued = false;
    const int32_t forced = verify ? bench_accept_length_ : 0;
    if (eagle) resolve_drafts(batch, drafts);
    if (eagle && verify) {
      std::vector<int32_t>& host_ids = launched.result.output.next_token_ids;
      const Tensor sampled_ids =
          ticket ? model_runner_.latest_sampled_ids(fb.num_logit_rows())
                 : Tensor(host_ids.data(), DType::kI32, {static_cast<int64_t>(host_ids.size())});
      queued = eagle_->queue_extend_and_draft(batch, output,
                                              {fb.input_ids, fb.id_ref_table, sampled_ids, forced});
    }
    if (ticket) launched.result.output = model_runner_.collect(*ticket);
    if (forced > 0) force_acceptance(batch, launched.result.output.next_token_ids);
    const std::vector<int32_t>& sampled = launched.result.output.next_token_ids;
    if (eagle) {
      eagle_->extend(batch, input_ids_, output, sampled, drafts, queued);
      launched.result.draft_ids.resize(drafts.size());
      if (trees) launched.result.draft_parents.resize(drafts.size());
      for (size_t i = 0; i < drafts.size(); ++i) {
        launched.result.draft_ids[i] = std::move(drafts[i].tokens);
        if (trees) launched.result.draft_parents[i] = std::move(drafts[i].parents);
      }
    }
    std::lock_guard lock(mutex_);
    record_sampled(launched, sampled);
    if (trees) record_accepted_paths(batch, launched.result, sampled);
    unfinished_.push_back(std::move(launched));
    return;
  }
  launched.sample = model_runner_.launch_forward_and_sample(
      fb, sampling, batch.vocab_mask.valid() ? &batch.vocab_mask : nullptr);
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < launched.rows.size(); ++i) {
    if (launched.next_pos[i] < 0) continue;  // a dropped sample feeds nothing
    pending_batch_[launched.rows[i]] = batch.id;
    pending_index_[launched.rows[i]] = static_cast<int32_t>(i);
  }
  unfinished_.push_back(std::move(launched));
}

ExecResult ModelBatchRunner::finish() {
  std::unique_lock lock(mutex_);
  SGL_CHECK(!unfinished_.empty()) << "finish() with nothing launched";
  if (unfinished_.front().sample) {
    const ModelRunner::LaunchedSample ticket = std::move(*unfinished_.front().sample);
    lock.unlock();  // launch() may queue the next batch meanwhile
    sampling::SampleOutput output = model_runner_.collect(ticket);
    lock.lock();
    Launched& oldest = unfinished_.front();
    record_sampled(oldest, output.next_token_ids);
    for (int32_t row : oldest.rows) {
      if (pending_batch_[row] == oldest.result.batch_id) pending_batch_[row] = -1;
    }
    oldest.result.output = std::move(output);
  }
  ExecResult result = std::move(unfinished_.front().result);
  unfinished_.pop_front();
  lock.unlock();
  batch_finished_.notify_all();
  return result;
}

void ModelBatchRunner::resolve_drafts(const ExecBatch& batch,
                                      std::vector<speculative::DraftTree>& drafts) {
  if (!eagle_->resolve_drafts(batch, drafts)) return;
  // The drafts' ids over their references, in the token rows and the pass's inputs.
  std::lock_guard lock(mutex_);
  size_t offset = 0;
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    const ExecRequest& r = batch.requests[i];
    const std::vector<int32_t>& tokens = drafts[i].tokens;
    if (!tokens.empty()) {
      std::copy(tokens.begin(), tokens.end(), token_row(r.req_pool_idx) + r.prefix_len + 1);
      std::copy(tokens.begin(), tokens.end(),
                input_ids_.begin() + static_cast<std::ptrdiff_t>(offset + 1));
    }
    offset += static_cast<size_t>(r.extend_len);
  }
}

void ModelBatchRunner::record_sampled(const Launched& launched, const std::vector<int32_t>& ids) {
  for (size_t i = 0; i < launched.rows.size(); ++i) {
    const int32_t pos = launched.next_pos[i];
    // A dropped sample (-1) must not land on the prompt the next chunk wrote there.
    if (pos >= 0 && pos < context_len_) token_row(launched.rows[i])[pos] = ids[i];
  }
}

void ModelBatchRunner::force_acceptance(const ExecBatch& batch,
                                        std::vector<int32_t>& sampled) const {
  const int32_t vocab = static_cast<int32_t>(model_runner_.config().vocab_size);
  size_t offset = 0, first_row = 0;  // the request's first token and first sampled row
  for (const ExecRequest& r : batch.requests) {
    // Drafts j < taken are accepted; draft `taken`, where there is one, is rejected.
    const int32_t taken = forced_accept_count(bench_accept_length_, r.sample_rows);
    for (int32_t j = 0; j < r.sample_rows - 1; ++j) {
      int32_t& sample = sampled[first_row + static_cast<size_t>(j)];
      sample = forced_sample(j, taken, r.sample_rows,
                             input_ids_[offset + 1 + static_cast<size_t>(j)], sample, vocab);
    }
    offset += static_cast<size_t>(r.extend_len);
    first_row += static_cast<size_t>(r.sample_rows);
  }
}

void ModelBatchRunner::record_accepted_paths(const ExecBatch& batch, const ExecResult& result,
                                             const std::vector<int32_t>& ids) {
  // record_sampled wrote row k's sample at prefix_len + k + 1; a tree's next tokens are its
  // accepted path's (the same rule the scheduler applies).
  size_t first_row = 0;
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    const ExecRequest& r = batch.requests[i];
    const std::vector<int32_t>& parents = result.draft_parents[i];
    if (!parents.empty()) {
      const std::span<const int32_t> sampled(ids.data() + first_row,
                                             static_cast<size_t>(r.sample_rows));
      const std::vector<int32_t> path =
          speculative::accepted_path(result.draft_ids[i], parents, sampled);
      int32_t* row = token_row(r.req_pool_idx);
      int32_t node = 0;
      for (size_t m = 0; m <= path.size(); ++m) {
        const int32_t pos = r.prefix_len + 1 + static_cast<int32_t>(m);
        if (pos < context_len_) row[pos] = sampled[static_cast<size_t>(node)];
        if (m < path.size()) node = path[m];
      }
    }
    first_row += static_cast<size_t>(r.sample_rows);
  }
}

void ModelBatchRunner::run_on_host(const ExecBatch& batch, const ForwardBatch& fb,
                                   const sampling::SamplingBatch& sampling, bool process,
                                   bool all_rows, ExecResult& result, model::ModelOutput* output) {
  // Host logits; processing edits them in place (they are scratch until the next forward).
  Tensor logits = model_runner_.forward_logits(fb, output);
  if (model_runner_.options().enable_nan_detection) {
    if (const int64_t rows = sampling::replace_nan_logits(logits); rows > 0) {
      // SGLang's warning, with the count.
      SGL_LOG_WARN << "Detected errors during sampling! NaN in the logits of " << rows
                   << " rows; sampled as " << sampling::kNanLogitReplacement;
    }
  }
  if (all_rows) {
    bool score = false;
    for (const ExecRequest& r : batch.requests) score = score || !r.logprob_targets.empty();
    if (score) result.prompt_logprobs = score_prompts(batch, fb, logits);
    logits = gather_sampled_rows(batch, fb, logits);
  }
  // Row of each request's first (usually only) sampled position.
  std::vector<int64_t> first_row(batch.requests.size());
  for (size_t i = 1; i < batch.requests.size(); ++i) {
    first_row[i] = first_row[i - 1] + batch.requests[i - 1].sample_rows;
  }
  // NOTE: the sampler reports logprobs of the processed distribution (penalties, bias and
  // the min_new_tokens mask applied; temperature not), as SGLang does.
  if (process) sampling::process_logits(logits, logit_processing(batch, first_row));
  // Mask rows are sampled rows, as `logits` has them now.
  if (batch.vocab_mask.valid()) sampling::apply_vocab_mask(logits, batch.vocab_mask.get());
  result.output = model_runner_.sample(logits, sampling);
}

sampling::LogitProcessorBatch ModelBatchRunner::logit_processing(
    const ExecBatch& batch, const std::vector<int64_t>& first_row) {
  sampling::LogitProcessorBatch out;
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    const ExecRequest& r = batch.requests[i];
    if (!r.process_logits) continue;
    SGL_CHECK_EQ(r.sample_rows, 1) << "logit processing reads one row per request";
    // The row holds the prompt and every token generated so far: a batch processed on the host
    // launches once every batch before it is finished, so this is current in the overlap loop
    // too. (No lock: finish() has nothing to write then.)
    const std::span<const int32_t> tokens(token_row(r.req_pool_idx), r.prefix_len + r.extend_len);
    out.add(first_row[i], {&r.sampling, tokens, r.prompt_len, r.min_tokens_stop_ids});
  }
  return out;
}

std::vector<sampling::PromptLogprobs> ModelBatchRunner::score_prompts(const ExecBatch& batch,
                                                                      const ForwardBatch& fb,
                                                                      const Tensor& logits) const {
  const int64_t vocab = logits.size(1);
  const float* data = logits.data<float>();
  std::vector<sampling::PromptLogprobs> out(batch.requests.size());
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    const ExecRequest& r = batch.requests[i];
    if (r.logprob_targets.empty()) continue;
    const auto n = static_cast<int32_t>(r.logprob_targets.size());
    SGL_CHECK(r.logprob_begin >= r.prefix_len && r.logprob_begin + n <= r.prefix_len + r.extend_len)
        << "prompt logprob rows outside the pass";
    const int64_t row = fb.qo_indptr_host[i] + (r.logprob_begin - r.prefix_len);
    out[i] =
        sampling::score_prompt_tokens(data + row * vocab, vocab, r.logprob_begin, r.logprob_targets,
                                      r.top_logprobs_num, r.token_ids_logprob);
  }
  return out;
}

std::vector<std::vector<float>> ModelBatchRunner::requested_hidden_states(
    const ExecBatch& batch, const ForwardBatch& fb, const Tensor& hidden_states) {
  SGL_CHECK(hidden_states.defined() && hidden_states.size(0) == fb.num_tokens)
      << "hidden states of every token were captured";
  const int64_t width = hidden_states.size(1);
  Tensor host = hidden_states;    // [num_tokens, width], activation dtype
  if (!host.device().is_cpu()) {  // to the host as it is, in one copy, then converted there
    hidden_staging_.resize(hidden_states.nbytes());
    host = Tensor(hidden_staging_.data(), hidden_states.dtype(), {fb.num_tokens, width});
    kernels::copy(hidden_states, host, model_runner_.stream());  // waits for the forward
  }
  std::vector<std::vector<float>> out(batch.requests.size());
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    if (!batch.requests[i].return_hidden_states) continue;
    const int64_t first = fb.qo_indptr_host[i];
    const int64_t rows = fb.qo_indptr_host[i + 1] - first;
    out[i].resize(static_cast<size_t>(rows * width));
    kernels::copy(host.slice_rows(first, rows), Tensor(out[i].data(), DType::kF32, {rows, width}),
                  model_runner_.stream());
  }
  return out;
}

std::vector<std::vector<int32_t>> ModelBatchRunner::requested_routed_experts(const ExecBatch& batch,
                                                                             const ForwardBatch& fb,
                                                                             const Tensor& routed) {
  SGL_CHECK(routed.defined() && routed.size(0) % fb.num_tokens == 0)
      << "return_routed_experts needs a MoE model run with enable_return_routed_experts";
  const int64_t layers = routed.size(0) / fb.num_tokens, top_k = routed.size(1);
  Tensor host = routed;  // [layers * num_tokens, top_k], layer-major
  if (!host.device().is_cpu()) {
    routed_staging_.resize(static_cast<size_t>(routed.numel()));
    host = Tensor(routed_staging_.data(), DType::kI32, routed.shape());
    kernels::copy(routed, host, model_runner_.stream());  // waits for the forward
  }
  const int32_t* ids = host.data<int32_t>();
  std::vector<std::vector<int32_t>> out(batch.requests.size());
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    if (!batch.requests[i].return_routed_experts) continue;
    const int64_t first = fb.qo_indptr_host[i], rows = fb.qo_indptr_host[i + 1] - first;
    out[i].reserve(static_cast<size_t>(rows * layers * top_k));
    for (int64_t t = first; t < first + rows; ++t) {  // token-major: [rows, layers, top_k]
      for (int64_t l = 0; l < layers; ++l) {
        const int32_t* row = ids + (l * fb.num_tokens + t) * top_k;
        out[i].insert(out[i].end(), row, row + top_k);
      }
    }
  }
  return out;
}

Tensor ModelBatchRunner::gather_sampled_rows(const ExecBatch& batch, const ForwardBatch& fb,
                                             const Tensor& logits) {
  const int64_t vocab = logits.size(1);
  int64_t rows = 0;
  for (const ExecRequest& r : batch.requests) rows += r.sample_rows;
  sampled_rows_.resize(static_cast<size_t>(rows * vocab));
  const float* data = logits.data<float>();
  float* out = sampled_rows_.data();
  for (size_t b = 0; b < batch.requests.size(); ++b) {
    const int64_t n = batch.requests[b].sample_rows;
    const int64_t first = fb.qo_indptr_host[b + 1] - n;  // the request's last n positions
    SGL_CHECK_GE(first, fb.qo_indptr_host[b]) << "more sampled rows than the pass's tokens";
    out = std::copy(data + first * vocab, data + (first + n) * vocab, out);
  }
  return Tensor(sampled_rows_.data(), DType::kF32, {rows, vocab});
}

}  // namespace sgl::runner
