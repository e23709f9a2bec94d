// ModelBatchRunner on the GPU: one fixed sequence of batches gives the same ids and logprobs run
// one at a time and pipelined as the engine's overlap loop drives it (batch N+1 launched before
// batch N is finished, its decode inputs read on the device from N's samples). The sequence
// reorders rows between batches, chunks a prefill (the first chunk's sample is dropped), mixes
// a prefill with decodes, samples one request with a seed and runs one batch on the host (a
// repetition penalty), so a wrong reference row, a stale token or a lost sample shows. Two
// requests ask token_ids_logprob (the device sampler's gather, the host Sampler's in the host
// batch): pipelined equals one at a time, and the sampled id's entry equals its logprob.
#include <gtest/gtest.h>

#include "cache/req_to_token_pool.h"
#include "cache/token_to_kv_pool_allocator.h"
#include "runner/model_batch_runner.h"
#include "runner/model_runner.h"
#include "test_data.h"

namespace sgl::runner {
namespace {

constexpr int32_t kContext = 256;

// One request's place in the runner's pools and how far it has got.
struct Seq {
  std::vector<int32_t> prompt;
  int32_t row = 0;
  std::vector<int32_t> slots;  // [kContext]
  int32_t in_kv = 0;           // tokens whose KV is written
};

// Builds the batches of the sequence against one runner's pools.
class Script {
 public:
  explicit Script(int32_t num_kv_slots) : pool_(8, kContext), kv_(num_kv_slots) {
    pool_.record_writes();
  }
  const cache::ReqToTokenPool& pool() const { return pool_; }
  // The rows written since the last call, for the next batch to carry to the runner.
  cache::ReqToTokenWrites take_writes() { return pool_.take_writes(); }

  int add(std::vector<int32_t> prompt) {
    Seq s{std::move(prompt)};
    s.row = *pool_.alloc();
    s.slots = *kv_.alloc(kContext);
    pool_.write(s.row, 0, s.slots);
    seqs_.push_back(std::move(s));
    return static_cast<int>(seqs_.size()) - 1;
  }

  // A prefill chunk of `n` prompt tokens of request i (samples: the prompt's last chunk).
  void extend(ExecBatch& b, int i, int32_t n) {
    Seq& s = seqs_[i];
    ExecRequest r = request_of(i);
    r.prefix_len = s.in_kv;
    r.extend_len = n;
    r.input_ids.assign(s.prompt.begin() + s.in_kv, s.prompt.begin() + s.in_kv + n);
    r.samples = s.in_kv + n == static_cast<int32_t>(s.prompt.size());
    add_to(b, i, std::move(r));
  }
  // One decode token of request i (its input: the token sampled last for it).
  void decode(ExecBatch& b, int i) {
    ExecRequest r = request_of(i);
    r.prefix_len = seqs_[i].in_kv;
    r.extend_len = 1;
    add_to(b, i, std::move(r));
  }

  sampling::SamplingParams& params(int i) { return params_[i]; }
  // More ids the asking requests list (at most kMaxTokenIdsLogprob - 3).
  void ask_also(std::vector<int32_t> ids) { extra_ids_ = std::move(ids); }

 private:
  ExecRequest request_of(int i) {
    ExecRequest r;
    r.req_pool_idx = seqs_[i].row;
    r.sampling = params_.count(i) ? params_[i] : sampling::SamplingParams{.temperature = 0.f};
    r.return_logprob = true;
    r.prompt_len = static_cast<int32_t>(seqs_[i].prompt.size());
    r.process_logits = r.sampling.has_penalties_or_bias();
    // Requests 0 and 2 ask for a few ids (the first and last of the vocabulary, a repeat) and
    // the extra ones the test sets (the ids a first run sampled).
    if (i % 2 == 0) {
      r.token_ids_logprob = {0, 511, 0};
      r.token_ids_logprob.insert(r.token_ids_logprob.end(), extra_ids_.begin(), extra_ids_.end());
    }
    return r;
  }
  void add_to(ExecBatch& b, int i, ExecRequest r) {
    Seq& s = seqs_[i];
    b.out_cache_loc.insert(b.out_cache_loc.end(), s.slots.begin() + s.in_kv,
                           s.slots.begin() + s.in_kv + r.extend_len);
    s.in_kv += r.extend_len;
    b.requests.push_back(std::move(r));
  }

  cache::ReqToTokenPool pool_;
  cache::TokenToKvPoolAllocator kv_;
  std::vector<Seq> seqs_;
  std::map<int, sampling::SamplingParams> params_;
  std::vector<int32_t> extra_ids_;
};

std::vector<ExecBatch> make_batches(Script& script) {
  const auto golden = test::golden("stories260K");
  std::vector<int32_t> prompts[4];
  for (int i = 0; i < 4; ++i) {
    prompts[i] =
        golden["cases"][i % golden["cases"].size()]["prompt_ids"].get<std::vector<int32_t>>();
    prompts[i].push_back(10 + i);  // four distinct prompts
  }
  for (auto& p : prompts) script.add(p);
  script.params(2) = {.temperature = 0.8f, .top_p = 0.9f, .seed = 7};
  std::vector<ExecBatch> batches;
  auto next = [&](ForwardMode mode) -> ExecBatch& {
    batches.push_back({.id = static_cast<int64_t>(batches.size()) + 1, .mode = mode});
    return batches.back();
  };
  const auto half = static_cast<int32_t>(prompts[1].size() / 2);
  ExecBatch* b = &next(ForwardMode::kExtend);
  b->req_to_token_writes = script.take_writes();  // every row, written by add()
  script.extend(*b, 0, static_cast<int32_t>(prompts[0].size()));
  script.extend(*b, 1, half);  // a first chunk: its sample is dropped
  b = &next(ForwardMode::kExtend);
  script.extend(*b, 1, static_cast<int32_t>(prompts[1].size()) - half);
  script.extend(*b, 2, static_cast<int32_t>(prompts[2].size()));
  for (const std::vector<int> order : {std::vector{0, 1, 2}, std::vector{2, 0, 1}}) {
    b = &next(ForwardMode::kDecode);
    for (int i : order) script.decode(*b, i);
  }
  b = &next(ForwardMode::kMixed);
  script.extend(*b, 3, static_cast<int32_t>(prompts[3].size()));
  script.decode(*b, 1);
  script.decode(*b, 0);
  script.decode(*b, 2);
  for (const std::vector<int> order : {std::vector{0, 1, 2, 3}, std::vector{3, 2, 1, 0}}) {
    b = &next(ForwardMode::kDecode);
    for (int i : order) script.decode(*b, i);
  }
  script.params(1) = {.temperature = 0.f, .repetition_penalty = 1.3f};  // host logits from here
  b = &next(ForwardMode::kDecode);
  for (int i : {1, 3, 0, 2}) script.decode(*b, i);
  script.params(1) = {.temperature = 0.f};
  for (const std::vector<int> order : {std::vector{0, 1, 2, 3}, std::vector{2, 3, 0, 1}}) {
    b = &next(ForwardMode::kDecode);
    for (int i : order) script.decode(*b, i);
  }
  return batches;
}

std::unique_ptr<ModelRunner> make_runner() {
  ModelRunnerOptions o;
  o.device = Device::cuda(0);
  o.num_kv_slots = 4 * kContext + 1;
  o.max_batch_size = 8;
  o.max_num_tokens = 512;
  o.context_length = kContext;
  auto r = ModelRunner::create(test::model_dir("stories260K"), o);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

bool on_host(const ExecBatch& b) {
  return std::any_of(b.requests.begin(), b.requests.end(),
                     [](const ExecRequest& r) { return r.process_logits; });
}

TEST(ModelBatchRunnerOnCuda, PipelinedBatchesMatchBatchesRunOneAtATime) {
  std::vector<ExecResult> results[2];
  for (int pipelined = 0; pipelined < 2; ++pipelined) {
    auto model = make_runner();
    ASSERT_TRUE(model);
    Script script(static_cast<int32_t>(model->num_kv_slots()));
    const std::vector<ExecBatch> batches = make_batches(script);
    ModelBatchRunner runner(*model, script.pool());
    std::vector<ExecResult>& out = results[pipelined];
    int64_t unfinished = 0;
    for (const ExecBatch& b : batches) {
      if (!pipelined) {
        out.push_back(runner.run(b));
        continue;
      }
      // The engine's overlap order: launch N+1, then finish N. A host batch launches only
      // once every earlier batch is finished (its launch would wait for that).
      if (on_host(b)) {
        for (; unfinished > 0; --unfinished) out.push_back(runner.finish());
      }
      runner.launch(b);
      if (++unfinished > 1) {
        out.push_back(runner.finish());
        --unfinished;
      }
    }
    for (; unfinished > 0; --unfinished) out.push_back(runner.finish());
    ASSERT_EQ(out.size(), batches.size());
  }
  for (size_t k = 0; k < results[0].size(); ++k) {
    const ExecResult &a = results[0][k], &b = results[1][k];
    EXPECT_EQ(a.batch_id, b.batch_id);
    EXPECT_EQ(a.output.next_token_ids, b.output.next_token_ids) << "batch " << k + 1;
    EXPECT_EQ(a.output.next_token_logprobs, b.output.next_token_logprobs) << "batch " << k + 1;
    EXPECT_EQ(a.output.token_ids_logprobs, b.output.token_ids_logprobs) << "batch " << k + 1;
  }
  // Again, the asking requests now also listing every id the runs above sampled (the same
  // tokens come out: asking changes no sampling): one value per asked id, equal to the sampled
  // token's logprob.
  std::vector<int32_t> sampled;
  for (const ExecResult& r : results[0]) {
    for (int32_t id : r.output.next_token_ids) {
      if (std::find(sampled.begin(), sampled.end(), id) == sampled.end() &&
          static_cast<int32_t>(sampled.size()) < sampling::kMaxTokenIdsLogprob - 3) {
        sampled.push_back(id);
      }
    }
  }
  auto model = make_runner();
  ASSERT_TRUE(model);
  Script script(static_cast<int32_t>(model->num_kv_slots()));
  script.ask_also(sampled);
  const std::vector<ExecBatch> batches = make_batches(script);
  ModelBatchRunner runner(*model, script.pool());
  std::vector<ExecResult> asked_results;
  for (const ExecBatch& b : batches) asked_results.push_back(runner.run(b));
  int matched = 0;
  for (size_t k = 0; k < batches.size(); ++k) {
    const sampling::SampleOutput& out = asked_results[k].output;
    EXPECT_EQ(out.next_token_ids, results[0][k].output.next_token_ids) << "batch " << k + 1;
    ASSERT_EQ(out.token_ids_logprobs.size(), out.next_token_ids.size()) << "batch " << k + 1;
    for (size_t b = 0; b < out.next_token_ids.size(); ++b) {
      const std::vector<int32_t>& asked = batches[k].requests[b].token_ids_logprob;
      const std::vector<float>& got = out.token_ids_logprobs[b];
      ASSERT_EQ(got.size(), asked.size()) << "batch " << k + 1 << " row " << b;
      if (asked.empty()) continue;
      EXPECT_EQ(got[0], got[2]) << "the repeat, batch " << k + 1 << " row " << b;
      const auto at = std::find(asked.begin(), asked.end(), out.next_token_ids[b]);
      if (at != asked.end() && batches[k].requests[b].samples) {
        EXPECT_NEAR(got[at - asked.begin()], out.next_token_logprobs[b], 1e-5)
            << "batch " << k + 1 << " row " << b;
        ++matched;
      }
    }
  }
  EXPECT_GT(matched, 0);
}

}  // namespace
}  // namespace sgl::runner
