// EAGLE's drafts through the batch runner against drafts computed from scratch. Two greedy
// requests share each batch: a chunked prefill beside a whole one, then verify passes, now and
// then one request decoding plainly beside the other's verify (runner::ModelBatchRunner with an
// EAGLE draft head); at each verify the drafts the runner proposed must be what a fresh draft
// computes from the request's whole sequence: a target extend over the tokens before the last one
// (its hidden states), a draft extend over the same positions reading each position's next token,
// then draft decode steps. That holds only if every incremental draft extend (chunks, accepted
// positions after each verify, their shifted ids and hidden rows) left the draft's KV and state
// as one pass over the sequence would.
// Built with SGL_TEST_ON_CUDA: the same on the GPU in float32, the runner's verify passes replayed
// from CUDA graphs (the reference's eager).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "cache/req_to_token_pool.h"
#include "eagle_heads.h"
#include "kernels/copy.h"
#include "runner/eagle_chain.h"
#include "runner/eagle_draft_runner.h"
#include "runner/forward_batch_builder.h"
#include "runner/model_batch_runner.h"
#include "speculative/draft_acceptance.h"
#include "speculative/draft_tree.h"
#include "test_data.h"

namespace sgl::runner {
namespace {

const std::filesystem::path kHeads = test::eagle_heads_dir();
#ifdef SGL_TEST_ON_CUDA
const Device kDevice = Device::cuda(0);
#else
const Device kDevice = Device::cpu();
#endif
constexpr int32_t kContext = 256;
constexpr int32_t kDrafts = 4;

struct Head {
  const char* target;
  const char* head;
  model::DraftKind kind;
  bool hits = false;  // drafts accepted along the way
};

// A target runner and its draft head, sized for one request of kContext tokens.
struct Pair {
  std::unique_ptr<ModelRunner> target;
  std::unique_ptr<EagleDraftRunner> draft;
};

// verify_tokens > 0 (on a GPU): the target replays CUDA graphs for verify passes of that many
// tokens a request (trees: topk > 1), as an engine's does; else it runs every pass eagerly.
Pair load(const Head& h, int32_t topk = 1, int32_t num_steps = 1, int32_t verify_tokens = 0) {
  ModelRunnerOptions o;
  o.device = kDevice;
  o.dtype = "float32";
  o.max_num_tokens = kContext;
  o.max_batch_size = 4;
  o.num_kv_slots = 2 * kContext;
  o.context_length = kContext;
  o.disable_cuda_graph = verify_tokens == 0;
  if (verify_tokens > 0) o.cuda_graph_verify_tokens = {verify_tokens};
  o.cuda_graph_verify_tree = topk > 1;
  const std::filesystem::path head = kHeads / h.head;
  if (h.kind == model::DraftKind::kEagle3) {
    auto layers = eagle3_capture_layers(head, test::model_dir(h.target));
    EXPECT_TRUE(layers.ok()) << layers.status().to_string();
    o.aux_hidden_state_layers = *layers;
  }
  Pair p;
  auto target = ModelRunner::create(test::model_dir(h.target), o);
  EXPECT_TRUE(target.ok()) << target.status().to_string();
  p.target = std::move(target).value();
  auto draft = EagleDraftRunner::create(head, h.kind, *p.target, topk, num_steps);
  EXPECT_TRUE(draft.ok()) << draft.status().to_string();
  p.draft = std::move(draft).value();
  return p;
}

// Host f32 copy of a device (or host) tensor of f32.
std::vector<float> host_rows(const Tensor& t, backend::Stream stream) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  kernels::copy(t, Tensor(out.data(), DType::kF32, t.shape()), stream);
  return out;
}

int32_t argmax_id(const std::vector<float>& logits, std::span<const int32_t> to_target) {
  const auto best =
      static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  return to_target.empty() ? best : to_target[static_cast<size_t>(best)];
}

// A sequence drafted from scratch: request row 0 with slots = positions, the target's pass over
// `tokens` but its last (not yet in any KV) and the draft extend over them.
struct ScratchSequence {
  ScratchSequence(Pair& p, const std::vector<int32_t>& tokens)
      : len(static_cast<int32_t>(tokens.size()) - 1),
        table(1, kContext),
        slots(kContext),
        builder(p.target->allocator(), kContext, 2, table),
        stream(p.target->stream()) {
    std::iota(slots.begin(), slots.end(), 0);
    table.write(0, 0, slots);
    const BatchRequest prefill{0, 0, std::span(tokens.data(), static_cast<size_t>(len)),
                               std::span(slots.data(), static_cast<size_t>(len))};
    ForwardBatch fb = builder.build(ForwardMode::kExtend, LogitsMode::kLastPerRequest,
                                    std::span(&prefill, 1), stream);
    fb.capture_hidden_mode = CaptureHiddenMode::kFull;
    const model::ModelOutput target = p.target->forward(fb);
    const bool eagle3 = p.draft->config().kind == model::DraftKind::kEagle3;
    // Position q reads token q + 1 and the target's hidden state at q.
    const BatchRequest extend{0, 0, std::span(tokens.data() + 1, static_cast<size_t>(len)),
                              std::span(slots.data(), static_cast<size_t>(len))};
    fb = builder.build(ForwardMode::kExtend, LogitsMode::kLastPerRequest, std::span(&extend, 1),
                       stream);
    extended = p.draft->forward(fb, eagle3 ? target.aux_hidden_states : target.hidden_states);
  }

  int32_t len;  // positions in the KV
  cache::ReqToTokenTable table;
  std::vector<int32_t> slots;
  ForwardBatchBuilder builder;
  backend::Stream stream;
  model::DraftOutput extended;  // the draft extend's output (its last row: draft 1)
};

// The first `n` drafts after `tokens` (its last token not yet in any KV), from scratch.
std::vector<int32_t> drafts_from_scratch(Pair& p, const std::vector<int32_t>& tokens, int32_t n) {
  ScratchSequence seq(p, tokens);
  const backend::Stream stream = seq.stream;
  model::DraftOutput out = seq.extended;
  ForwardBatch fb;
  std::vector<int32_t> drafts = {
      argmax_id(host_rows(out.logits, stream), p.draft->draft_to_target())};
  Buffer hidden(p.target->allocator(), p.target->compute_dtype(), {1, out.hidden_states.size(1)});
  for (int32_t j = 1; j < n; ++j) {
    kernels::copy(out.hidden_states, hidden, stream);
    const BatchRequest step{0, seq.len + j - 1, std::span(&drafts.back(), 1),
                            std::span(seq.slots.data() + seq.len + j - 1, 1)};
    fb = seq.builder.build(ForwardMode::kDecode, LogitsMode::kLastPerRequest, std::span(&step, 1),
                           stream);
    out = p.draft->forward(fb, hidden);
    drafts.push_back(argmax_id(host_rows(out.logits, stream), p.draft->draft_to_target()));
  }
  return drafts;
}

// The tree of `n` drafts after `tokens`, from scratch: a draft extend as above, then each draft
// step's branches one at a time, each over the prefix's slots (positions), its ancestors' and its
// own (kContext + candidate index).
speculative::DraftTree tree_from_scratch(Pair& p, const std::vector<int32_t>& tokens, int32_t topk,
                                         int32_t num_steps, int32_t n) {
  ScratchSequence seq(p, tokens);
  const backend::Stream stream = seq.stream;
  model::DraftOutput out = seq.extended;
  ForwardBatch fb;
  const std::span<const int32_t> to_target = p.draft->draft_to_target();
  auto top = [&](const model::DraftOutput& o) {
    std::vector<speculative::TokenLogprob> t =
        speculative::top_k_logprobs(host_rows(o.logits, stream), topk);
    for (auto& c : t)
      c.token = to_target.empty() ? c.token : to_target[static_cast<size_t>(c.token)];
    return t;
  };
  speculative::DraftTreeBuilder tree(topk);
  tree.add_children(-1, top(out));
  const int64_t width = out.hidden_states.size(1);
  // Each candidate's hidden input: its parent's draft output (the extend's for the root's).
  Buffer hidden(p.target->allocator(), p.target->compute_dtype(), {256, width});
  kernels::copy(out.hidden_states, hidden.tensor().slice_rows(0, 1), stream);
  std::vector<int32_t> source(1, 0);  // per candidate + 1: row of `hidden` its children read
  int32_t rows = 1;
  for (int32_t s = 2; s <= num_steps; ++s) {
    for (int32_t node : tree.take_frontier()) {
      const auto& c = tree.candidate(node);
      std::vector<int32_t> kv(seq.slots.begin(), seq.slots.begin() + seq.len);
      std::vector<int32_t> path;
      for (int32_t a = node; a >= 0; a = tree.candidate(a).parent) path.push_back(kContext + a);
      kv.insert(kv.end(), path.rbegin(), path.rend());
      const int32_t own = kContext + node;
      BatchRequest step{0, seq.len + c.depth - 1, std::span(&c.token, 1), std::span(&own, 1)};
      step.kv_slots = kv;
      fb = seq.builder.build(ForwardMode::kDecode, LogitsMode::kLastPerRequest, std::span(&step, 1),
                             stream);
      const int32_t in_row = c.parent < 0 ? 0 : source[static_cast<size_t>(c.parent + 1)];
      out = p.draft->forward(fb, hidden.tensor().slice_rows(in_row, 1));
      source.resize(static_cast<size_t>(tree.size() + 1), -1);
      source[static_cast<size_t>(node + 1)] = rows;
      kernels::copy(out.hidden_states, hidden.tensor().slice_rows(rows++, 1), stream);
      tree.add_children(node, top(out));
    }
  }
  return tree.select(n);
}

// A runner's drafts (trees for topk > 1, of n nodes, from num_steps steps) at each verify step
// against drafts from scratch.
void check_runner_drafts(const Head& h, int32_t topk, int32_t num_steps, int32_t n);

class EagleWorkerTest : public ::testing::TestWithParam<Head> {};

TEST_P(EagleWorkerTest, DraftsEqualAFreshDraftOverTheSequence) {
  check_runner_drafts(GetParam(), 1, kDrafts, kDrafts);
}

struct TreeCase {
  Head head;
  int32_t topk, num_steps, n;
};

class EagleWorkerTreeTest : public ::testing::TestWithParam<TreeCase> {};

TEST_P(EagleWorkerTreeTest, TreesEqualAFreshTreeOverTheSequence) {
  const TreeCase& c = GetParam();
  check_runner_drafts(c.head, c.topk, c.num_steps, c.n);
}

void check_runner_drafts(const Head& h, int32_t topk, int32_t num_steps, int32_t n) {
  const bool trees = topk > 1;
  // The runner's verify passes of two full entries replay graphs (on a GPU), the reference's
  // run eagerly.
  Pair runner = load(h, topk, num_steps, n + 1), reference = load(h, topk, num_steps);
  ASSERT_TRUE(runner.draft && reference.draft);
  cache::ReqToTokenPool pool(2, kContext);
  pool.record_writes();
  ASSERT_EQ(pool.alloc(), 0);
  ASSERT_EQ(pool.alloc(), 1);
  ModelBatchRunner batch_runner(*runner.target, pool, runner.draft.get());

  // Two requests in every batch (row r's slots are kContext * r + position): the first two
  // golden prompts, each with ten tokens of its greedy continuation, after which tiny-llama's
  // first repeats one token (the repeat head's drafts stand there).
  const nlohmann::json cases = test::golden(h.target)["cases"];
  std::vector<std::vector<int32_t>> tokens(2);
  for (size_t r = 0; r < 2; ++r) {
    tokens[r] = cases[r]["prompt_ids"].get<std::vector<int32_t>>();
    const auto continuation = cases[r]["greedy_ids"].get<std::vector<int32_t>>();
    tokens[r].insert(tokens[r].end(), continuation.begin(), continuation.begin() + 10);
  }
  sampling::SamplingParams greedy;
  greedy.temperature = 0.f;
  struct Part {
    int32_t row, prefix;
    std::vector<int32_t> input;
    int32_t sample_rows = 1;
    bool samples = true;
    int32_t next_input_id = -1;
  };
  int64_t batch_id = 0;
  // Fresh slots for every pass (a tree's accepted nodes keep theirs at other positions).
  int32_t next_slot = 1;
  std::vector<std::vector<int32_t>> pass_slots(2);  // each request's slots in the latest pass
  auto run = [&](std::vector<Part> parts) {
    ExecBatch batch;
    batch.id = batch_id++;
    batch.mode = ForwardMode::kExtend;
    for (Part& part : parts) {
      const auto count = static_cast<int32_t>(part.input.size());
      std::vector<int32_t> slots(static_cast<size_t>(count));
      std::iota(slots.begin(), slots.end(), next_slot);
      next_slot += count;
      EXPECT_LE(next_slot, 2 * kContext);
      pool.write(part.row, part.prefix, slots);
      pass_slots[static_cast<size_t>(part.row)] = slots;
      ExecRequest r{part.row, part.prefix, count, std::move(part.input), greedy};
      r.sample_rows = part.sample_rows;
      r.samples = part.samples;
      r.next_input_id = part.next_input_id;
      batch.requests.push_back(std::move(r));
      batch.out_cache_loc.insert(batch.out_cache_loc.end(), slots.begin(), slots.end());
    }
    batch.req_to_token_writes = pool.take_writes();
    return batch_runner.run(batch);
  };

  // Request 0's prompt in two chunks (the first ends before the prompt does: its next token is
  // known), request 1's whole beside the first chunk.
  const auto chunk = static_cast<int32_t>(tokens[0].size() / 2);
  ExecResult result =
      run({{0, 0, {tokens[0].begin(), tokens[0].begin() + chunk}, 1, false, tokens[0][chunk]},
           {1, 0, tokens[1]}});
  tokens[1].push_back(result.output.next_token_ids[1]);
  result = run({{0, chunk, {tokens[0].begin() + chunk, tokens[0].end()}}});
  tokens[0].push_back(result.output.next_token_ids[0]);
  int32_t accepted_total = 0;
  for (int step = 0; step < 12; ++step) {
    // Both verify; every third step request 1 decodes plainly instead (as when the KV cache has
    // no room for its drafts), and (chains) the step before it verifies fewer drafts than
    // request 0 (as near its length limit).
    const bool plain_1 = step % 3 == 2, short_1 = !trees && step % 3 == 1;
    std::vector<Part> parts;
    for (int32_t r = 0; r < 2; ++r) {
      const auto kv = static_cast<int32_t>(tokens[r].size()) - 1;
      const int32_t rows = r == 1 && plain_1 ? 1 : r == 1 && short_1 ? n / 2 + 1 : n + 1;
      std::vector<int32_t> input(static_cast<size_t>(rows), 0);  // last token, placeholders
      input[0] = tokens[r].back();
      parts.push_back({r, kv, std::move(input), rows});
    }
    result = run(std::move(parts));
    ASSERT_EQ(result.draft_ids.size(), 2u);
    ASSERT_EQ(result.draft_parents.size(), trees ? 2u : 0u);
    size_t row = 0;  // the request's first sampled row
    for (size_t r = 0; r < 2; ++r) {
      const std::vector<int32_t>& drafts = result.draft_ids[r];
      const std::span<const int32_t> sampled =
          std::span(result.output.next_token_ids).subspan(row, drafts.size() + 1);
      row += drafts.size() + 1;
      const auto kv = static_cast<int32_t>(tokens[r].size()) - 1;
      std::vector<int32_t> path;  // the accepted nodes
      if (r == 1 && plain_1) {
        EXPECT_TRUE(drafts.empty());
      } else if (!trees) {
        const int32_t want = r == 1 && short_1 ? n / 2 : n;
        EXPECT_EQ(drafts, drafts_from_scratch(reference, tokens[r], want))
            << "request " << r << " step " << step;
        for (int32_t a = 1; a <= speculative::accepted_drafts(drafts, sampled); ++a) {
          path.push_back(a);
        }
      } else {
        const speculative::DraftTree want =
            tree_from_scratch(reference, tokens[r], topk, num_steps, n);
        EXPECT_EQ(drafts, want.tokens) << "request " << r << " step " << step;
        EXPECT_EQ(result.draft_parents[r], want.parents) << "request " << r << " step " << step;
        path = speculative::accepted_path(drafts, result.draft_parents[r], sampled);
        // The scheduler's remap: the accepted nodes' slots follow the root's.
        std::vector<int32_t> kept;
        for (int32_t node : path) kept.push_back(pass_slots[r][static_cast<size_t>(node)]);
        pool.write(static_cast<int32_t>(r), kv + 1, kept);
      }
      accepted_total += static_cast<int32_t>(path.size());
      tokens[r].push_back(sampled[0]);
      for (int32_t node : path) tokens[r].push_back(sampled[static_cast<size_t>(node)]);
    }
  }
  std::cout << h.head << ": " << accepted_total << " drafts accepted in 20 verify entries\n";
  if (h.hits) EXPECT_GE(accepted_total, 3) << "the drafts extended over accepted positions";
}

// A chain batch whose requests draft different counts, one of them at the context's end (the
// scheduler gives it fewer drafts): its extra steps stay inside the context, and the other
// request's drafts equal its drafts alone.
TEST(EagleChainTest, ARequestAtTheContextEndBesideALongerChain) {
  constexpr int32_t kSteps = 4;
  Pair p = load(Head{"tiny-llama", "tiny-llama-eagle3", model::DraftKind::kEagle3}, 1, kSteps,
                kSteps + 1);
  ASSERT_TRUE(p.draft);
  cache::ReqToTokenTable table(2, kContext);
  Allocator& allocator = p.target->allocator();
  Buffer first(allocator, DType::kI32, {2, 1});
  Buffer hidden(allocator, p.target->compute_dtype(), {2, p.draft->config().llama.hidden_size});
  kernels::zero(first, p.target->stream());
  kernels::zero(hidden, p.target->stream());
  EagleChain chain(*p.draft, table, first, hidden, 4);
  // Request 0: its last token at the context's last position but one, one draft (no step).
  // Request 1: a short prefix and all four drafts (three steps).
  std::vector<int32_t> end_slots(kContext - 2), short_slots(10 + kSteps - 1);
  std::iota(end_slots.begin(), end_slots.end(), 1);
  std::iota(short_slots.begin(), short_slots.end(), 300);
  const ChainRequest at_end{0, kContext - 2, 1, end_slots};
  const ChainRequest longer{1, 10, kSteps, short_slots};
  const std::vector<ChainRequest> both = {at_end, longer};
  const std::vector<std::vector<int32_t>> together = chain.draft(both);
  ASSERT_EQ(together.size(), 2u);
  EXPECT_EQ(together[0].size(), 1u);
  EXPECT_EQ(together[1].size(), static_cast<size_t>(kSteps));
  const std::vector<std::vector<int32_t>> alone = chain.draft(std::span(&longer, 1));
  EXPECT_EQ(alone.at(0), together[1]);
}

INSTANTIATE_TEST_SUITE_P(
    Heads, EagleWorkerTest,
    ::testing::Values(Head{"tiny-llama", "tiny-llama-eagle", model::DraftKind::kEagle},
                      Head{"tiny-llama", "tiny-llama-eagle-repeat", model::DraftKind::kEagle, true},
                      Head{"tiny-llama", "tiny-llama-eagle3", model::DraftKind::kEagle3},
                      Head{"tiny-qwen3", "tiny-qwen3-eagle3", model::DraftKind::kEagle3}),
    [](const auto& info) {
      std::string name = info.param.head;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

INSTANTIATE_TEST_SUITE_P(
    Trees, EagleWorkerTreeTest,
    ::testing::Values(
        TreeCase{{"tiny-llama", "tiny-llama-eagle", model::DraftKind::kEagle}, 2, 3, 5},
        TreeCase{
            {"tiny-llama", "tiny-llama-eagle-repeat", model::DraftKind::kEagle, true}, 3, 4, 9},
        TreeCase{{"tiny-llama", "tiny-llama-eagle3", model::DraftKind::kEagle3}, 4, 2, 8},
        TreeCase{{"tiny-qwen3", "tiny-qwen3-eagle3", model::DraftKind::kEagle3}, 3, 3, 6},
        TreeCase{{"tiny-qwen3", "tiny-qwen3-eagle", model::DraftKind::kEagle}, 5, 1, 5},
        // Every candidate verified (k + (steps - 1) k^2 of them): the deepest steps' children
        // are compared too, not only the best few, which random heads leave shallow.
        TreeCase{{"tiny-llama", "tiny-llama-eagle", model::DraftKind::kEagle}, 2, 4, 14},
        TreeCase{{"tiny-qwen3", "tiny-qwen3-eagle3", model::DraftKind::kEagle3}, 3, 3, 21}),
    [](const auto& info) {
      std::string name = std::string(info.param.head.head) + "_" + std::to_string(info.param.topk) +
                         "_" + std::to_string(info.param.num_steps) + "_" +
                         std::to_string(info.param.n);
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

}  // namespace
}  // namespace sgl::runner
