// The memory an EAGLE head takes beside its target, planned before either loads
// (plan_draft_head_memory), against what the loaded head took (at one rank and at two, where it
// reads the target's LM head in parts); and a target KV pool sized from its memory fraction
// leaving room for the head's KV layer and fixed bytes.
#include "runner/draft_head_memory.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "eagle_heads.h"
#include "runner/eagle_draft_runner.h"
#include "runner/model_runner.h"
#include "test_data.h"
#include "tp_ranks.h"

namespace sgl::runner {
namespace {

const std::filesystem::path kHeads = test::eagle_heads_dir();

struct Case {
  const char* target;
  const char* head;
  model::DraftKind kind;
  int32_t topk;
  int32_t num_steps;
};

ModelRunnerOptions target_options(const Case& c) {
  ModelRunnerOptions o;
  o.dtype = "float32";
  o.max_num_tokens = 256;
  o.max_batch_size = 64;
  o.context_length = 512;
  if (c.kind == model::DraftKind::kEagle3) {
    auto layers = eagle3_capture_layers(kHeads / c.head, test::model_dir(c.target));
    EXPECT_TRUE(layers.ok()) << layers.status().to_string();
    if (layers.ok()) o.aux_hidden_state_layers = *layers;
  }
  return o;
}

class DraftHeadMemoryTest : public ::testing::TestWithParam<Case> {};

TEST_P(DraftHeadMemoryTest, PlanEqualsWhatTheLoadedHeadTook) {
  const Case& c = GetParam();
  ModelRunnerOptions o = target_options(c);
  o.num_kv_slots = 1024;
  auto target = ModelRunner::create(test::model_dir(c.target), o);
  ASSERT_TRUE(target.ok()) << target.status().to_string();
  const DraftHeadOptions head{.dir = kHeads / c.head, .topk = c.topk, .num_steps = c.num_steps};
  auto planned = plan_draft_head_memory(head, (*target)->draft_target_sizes(), DType::kF32,
                                        (*target)->allocator());
  ASSERT_TRUE(planned.ok()) << planned.status().to_string();
  auto draft = EagleDraftRunner::create(head.dir, c.kind, **target, c.topk, c.num_steps);
  ASSERT_TRUE(draft.ok()) << draft.status().to_string();
  const DraftHeadMemory took = (*draft)->memory();
  EXPECT_EQ(planned->fixed_bytes, took.fixed_bytes);
  EXPECT_EQ(planned->bytes_per_kv_slot, took.bytes_per_kv_slot);
  // One layer of K and V per slot (f32); fixed: the scratch slots of 64 requests' draft steps
  // and the head's weights, activations and RoPE table beside them.
  const model::ModelConfig& h = (*draft)->config().llama;
  EXPECT_EQ(took.bytes_per_kv_slot, 2 * h.num_key_value_heads * h.head_dim * 4);
  const int64_t scratch = int64_t{64} * c.topk * (c.num_steps - 1);
  EXPECT_GT(took.fixed_bytes, scratch * took.bytes_per_kv_slot);
}

// At two tensor-parallel ranks an EAGLE head reads the target's vocab-parallel LM head in parts,
// which its activations gather: planned from the rank count alone before the target loads.
TEST(DraftHeadMemory, PlanEqualsWhatTheLoadedHeadTookAtTwoRanks) {
  const Case c{"tiny-llama", "tiny-llama-eagle", model::DraftKind::kEagle, 1, 1};
  std::vector<DraftHeadMemory> planned(2), took(2);
  test::run_ranks(2, [&](int rank, distributed::Communicator& comm) {
    ModelRunnerOptions o = target_options(c);
    o.num_kv_slots = 1024;
    o.tp_size = 2;
    auto target = ModelRunner::create(test::model_dir(c.target), o, &comm);
    ASSERT_TRUE(target.ok()) << target.status().to_string();
    const DraftHeadOptions head{.dir = kHeads / c.head};
    auto plan = plan_draft_head_memory(head, (*target)->draft_target_sizes(), DType::kF32,
                                       (*target)->allocator());
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    planned[static_cast<size_t>(rank)] = *plan;
    auto draft = EagleDraftRunner::create(head.dir, c.kind, **target);
    ASSERT_TRUE(draft.ok()) << draft.status().to_string();
    took[static_cast<size_t>(rank)] = (*draft)->memory();
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(planned[static_cast<size_t>(r)].fixed_bytes, took[static_cast<size_t>(r)].fixed_bytes)
        << "rank " << r;
    EXPECT_EQ(planned[static_cast<size_t>(r)].bytes_per_kv_slot,
              took[static_cast<size_t>(r)].bytes_per_kv_slot)
        << "rank " << r;
  }
}

// Two pools from the same budget (about 16 MiB of the host's free memory), without and with
// the head: with it, each slot also pays the head's KV layer and the budget its fixed bytes.
TEST_P(DraftHeadMemoryTest, KvPoolLeavesRoomForTheHead) {
  const Case& c = GetParam();
  auto mem = backend::memory_info(Device::cpu());
  ASSERT_TRUE(mem.ok()) << mem.status().to_string();
  ModelRunnerOptions o = target_options(c);
  o.mem_fraction_static = 16.0 * (1 << 20) / static_cast<double>(mem->free_bytes);
  auto alone = ModelRunner::create(test::model_dir(c.target), o);
  ASSERT_TRUE(alone.ok()) << alone.status().to_string();
  const int64_t slots_alone = (*alone)->num_kv_slots();
  const model::ModelConfig& t = (*alone)->config();
  const int64_t target_per_slot = 2 * t.num_hidden_layers * t.num_key_value_heads * t.head_dim * 4;
  alone->reset();

  o.draft_head = DraftHeadOptions{.dir = kHeads / c.head, .topk = c.topk, .num_steps = c.num_steps};
  auto paired = ModelRunner::create(test::model_dir(c.target), o);
  ASSERT_TRUE(paired.ok()) << paired.status().to_string();
  auto head = plan_draft_head_memory(*o.draft_head, (*paired)->draft_target_sizes(), DType::kF32,
                                     (*paired)->allocator());
  ASSERT_TRUE(head.ok()) << head.status().to_string();
  // Neither pool reached its cap (max_batch_size x context), so memory sized both.
  ASSERT_LT(slots_alone, o.max_batch_size * o.context_length);
  const double budget = static_cast<double>(slots_alone * target_per_slot);
  const double expected = (budget - static_cast<double>(head->fixed_bytes)) /
                          static_cast<double>(target_per_slot + head->bytes_per_kv_slot);
  // The host's free memory moves between the two loads (other tests run beside this one).
  EXPECT_NEAR(static_cast<double>((*paired)->num_kv_slots()), expected, 0.05 * expected)
      << slots_alone << " slots alone, " << target_per_slot << " B a slot; the head "
      << head->fixed_bytes << " B fixed, " << head->bytes_per_kv_slot << " B a slot";
}

INSTANTIATE_TEST_SUITE_P(
    Heads, DraftHeadMemoryTest,
    ::testing::Values(Case{"tiny-llama", "tiny-llama-eagle", model::DraftKind::kEagle, 1, 1},
                      Case{"tiny-llama", "tiny-llama-eagle3", model::DraftKind::kEagle3, 1, 3},
                      Case{"tiny-qwen3", "tiny-qwen3-eagle", model::DraftKind::kEagle, 4, 3}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name = info.param.head;
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name + "_topk" + std::to_string(info.param.topk) + "_steps" +
             std::to_string(info.param.num_steps);
    });

}  // namespace
}  // namespace sgl::runner
