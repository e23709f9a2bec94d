// Weight updates from disk (SGLang's update_weights_from_disk): a runner whose weights are
// overwritten with another checkpoint of the same network gives exactly the logits a runner
// loaded from that checkpoint gives, and back; a checkpoint of another network, or one missing a
// tensor, is refused and changes nothing; a read that fails part way says the weights were
// touched. Reading weights back by name (get_weights_by_name): every checkpoint tensor, fused,
// stacked or tied, reads back as the checkpoint holds it. Dense, MoE (stacked experts) and
// shared-expert models. Built with SGL_TEST_ON_CUDA: the same on the GPU in float32.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "model/layers/linear.h"
#include "model/model_registry.h"
#include "model/model_source.h"
#include "model/safetensors.h"
#include "model/weight_loader.h"
#include "model_test_util.h"
#include "runner/model_runner.h"
#include "runner_test_util.h"

namespace sgl::model {
namespace {

namespace fs = std::filesystem;
using test_util::max_abs_diff;
using test_util::prefill_logits;
using test_util::raw_bytes;
using test_util::SyntheticTensor;
using test_util::TempDir;
using test_util::testdata_models_dir;

const std::vector<int32_t> kPrompt = {1, 5, 9, 2, 7, 3};

// The test model `model` as f32 with every value times `scale` (the trainer's next step, as far
// as a test can tell), in `dir`; `drop` names a tensor left out.
fs::path scaled_checkpoint(const fs::path& dir, const std::string& model, float scale,
                           const std::string& drop = "") {
  const fs::path src = testdata_models_dir() / model;
  Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(src);
  EXPECT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  std::vector<SyntheticTensor> tensors;
  for (const std::string& name : (*ckpt)->names()) {
    if (name == drop) continue;
    const TensorInfo* t = (*ckpt)->find(name);
    std::vector<float> values(static_cast<size_t>(t->numel()));
    EXPECT_TRUE(tensor_to_f32(*t, values.data()).ok()) << name;
    for (float& v : values) v *= scale;
    tensors.push_back({name, "F32", t->shape, raw_bytes(values)});
  }
  const fs::path out = dir / (model + "-x" + std::to_string(scale) + (drop.empty() ? "" : "-cut"));
  fs::create_directories(out);
  fs::copy_file(src / "config.json", out / "config.json");
  std::ofstream(out / "model.safetensors", std::ios::binary)
      << test_util::build_safetensors(tensors, R"({"format":"pt"})");
  return out;
}

std::unique_ptr<runner::ModelRunner> make_runner(const fs::path& path) {
  runner::ModelRunnerOptions options;
  options.max_num_tokens = 64;
  options.max_batch_size = 4;
  options.num_kv_slots = 256;
  options.dtype = "float32";
#ifdef SGL_TEST_ON_CUDA
  options.device = Device::cuda(0);
#endif
  auto r = runner::ModelRunner::create(path, options);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

class WeightUpdate : public ::testing::TestWithParam<const char*> {};

TEST_P(WeightUpdate, GivesTheNewCheckpointsLogitsThenTheOldOnesBack) {
  TempDir dir;
  const fs::path original = testdata_models_dir() / GetParam();
  const fs::path next = scaled_checkpoint(dir.path(), GetParam(), 0.9f);
  auto served = make_runner(original);
  auto fresh = make_runner(next);
  ASSERT_TRUE(served && fresh);
  const std::vector<float> before = prefill_logits(*served, kPrompt);
  const std::vector<float> want = prefill_logits(*fresh, kPrompt);
  ASSERT_GT(max_abs_diff(before, want), 1e-3) << "the scaled checkpoint changes nothing";

  ASSERT_TRUE(served->update_weights_from_disk(next).ok());
  EXPECT_EQ(served->weights_path(), next);
  EXPECT_EQ(max_abs_diff(prefill_logits(*served, kPrompt), want), 0.0);

  ASSERT_TRUE(served->update_weights_from_disk(original).ok());
  EXPECT_EQ(served->weights_path(), original);
  EXPECT_EQ(max_abs_diff(prefill_logits(*served, kPrompt), before), 0.0);
}

// Every tensor of the checkpoint reads back as it is stored (f32 here), wherever the model keeps
// it: fused qkv and gate_up rows, stacked experts, norms; the tied LM head as the embedding.
TEST_P(WeightUpdate, EveryCheckpointTensorReadsBackByName) {
  const fs::path path = testdata_models_dir() / GetParam();
  auto served = make_runner(path);
  ASSERT_TRUE(served);
  Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(path);
  ASSERT_TRUE(ckpt.ok());
  for (const std::string& name : (*ckpt)->names()) {
    const TensorInfo* t = (*ckpt)->find(name);
    std::vector<float> want(static_cast<size_t>(t->numel()));
    ASSERT_TRUE(tensor_to_f32(*t, want.data()).ok());
    Result<runner::ModelRunner::HostWeight> got = served->read_weight(name);
    ASSERT_TRUE(got.ok()) << name << ": " << got.status().to_string();
    EXPECT_EQ(got->shape, t->shape) << name;
    EXPECT_TRUE(got->slice.whole()) << name;
    EXPECT_EQ(got->values, want) << name;
  }
  test_util::expect_status(served->read_weight("model.layers.0.mlp.nothing.weight").status(),
                           StatusCode::kNotFound, {"no weight named"});
}

TEST(WeightRead, ATiedHeadReadsAsTheEmbedding) {
  auto served = make_runner(testdata_models_dir() / "tiny-llama-tied");
  ASSERT_TRUE(served);
  Result<runner::ModelRunner::HostWeight> head = served->read_weight("lm_head.weight");
  Result<runner::ModelRunner::HostWeight> embed = served->read_weight("model.embed_tokens.weight");
  ASSERT_TRUE(head.ok() && embed.ok());
  EXPECT_EQ(head->values, embed->values);
}

TEST(WeightRead, AnUpdatedWeightReadsAsTheNewCheckpoints) {
  TempDir dir;
  auto served = make_runner(testdata_models_dir() / "tiny-qwen3-moe");
  ASSERT_TRUE(served);
  const std::string name = "model.layers.1.mlp.experts.3.up_proj.weight";
  Result<runner::ModelRunner::HostWeight> before = served->read_weight(name);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(
      served->update_weights_from_disk(scaled_checkpoint(dir.path(), "tiny-qwen3-moe", 0.5f)).ok());
  Result<runner::ModelRunner::HostWeight> after = served->read_weight(name);
  ASSERT_TRUE(after.ok());
  std::vector<float> want = before->values;
  for (float& v : want) v *= 0.5f;
  EXPECT_EQ(after->values, want);
}

INSTANTIATE_TEST_SUITE_P(Models, WeightUpdate,
                         ::testing::Values("tiny-qwen3", "tiny-qwen3-moe", "tiny-qwen2-moe"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(WeightUpdateRefusal, AnotherNetworkOrAMissingTensorChangesNothing) {
  TempDir dir;
  const fs::path original = testdata_models_dir() / "tiny-qwen3";
  auto served = make_runner(original);
  ASSERT_TRUE(served);
  const std::vector<float> before = prefill_logits(*served, kPrompt);

  const Status other = served->update_weights_from_disk(testdata_models_dir() / "tiny-llama");
  test_util::expect_status(other, StatusCode::kInvalidArgument, {"describes another network"});

  const std::string cut = "model.layers.1.mlp.down_proj.weight";
  const Status missing =
      served->update_weights_from_disk(scaled_checkpoint(dir.path(), "tiny-qwen3", 0.9f, cut));
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find(cut), std::string::npos) << missing.to_string();

  const Status absent = served->update_weights_from_disk(dir.path() / "nowhere");
  EXPECT_FALSE(absent.ok());

  EXPECT_EQ(served->weights_path(), original);
  EXPECT_EQ(max_abs_diff(prefill_logits(*served, kPrompt), before), 0.0);
}

// A source whose read of one tensor fails after the checks passed (a disk error mid-update).
class FailingRead final : public WeightSource {
 public:
  FailingRead(const WeightSource& inner, std::string broken)
      : inner_(inner), broken_(std::move(broken)) {}
  std::string describe() const override { return inner_.describe(); }
  bool has(const std::string& name) const override { return inner_.has(name); }
  Result<std::vector<int64_t>> shape(const std::string& name) const override {
    return inner_.shape(name);
  }
  std::vector<std::string> names() const override { return inner_.names(); }
  Status check(const std::string& name, const std::vector<int64_t>& shape) const override {
    return inner_.check(name, shape);
  }
  Status read_f32(const std::string& name, const std::vector<int64_t>& shape,
                  float* out) const override {
    if (name == broken_) return data_loss("a read error in " + name);
    return inner_.read_f32(name, shape, out);
  }
  Result<std::optional<StoredTensor>> stored(const std::string& name,
                                             const std::vector<int64_t>& shape) const override {
    if (name == broken_) return std::optional<StoredTensor>();  // read through read_f32
    return inner_.stored(name, shape);
  }
  Result<size_t> stored_nbytes(const std::string& name) const override {
    return inner_.stored_nbytes(name);
  }

 private:
  const WeightSource& inner_;
  std::string broken_;
};

std::vector<float> embedding_of(const Model& model) {
  const Tensor t = model.embed_and_head().embed_tokens->weight.tensor();
  const float* p = t.data<float>();
  return std::vector<float>(p, p + t.numel());
}

TEST(WeightUpdateRefusal, AReadFailingPartWaySaysTheWeightsWereTouched) {
  TempDir dir;
  Result<ModelSource> original = open_model_source(testdata_models_dir() / "tiny-qwen3", {});
  Result<ModelSource> next =
      open_model_source(scaled_checkpoint(dir.path(), "tiny-qwen3", 0.5f), {});
  ASSERT_TRUE(original.ok() && next.ok());
  const backend::Stream cpu{Device::cpu(), nullptr};
  WeightLoader load(original->weights.get(), cpu_allocator(), DType::kF32, cpu);
  Result<std::unique_ptr<Model>> model =
      create_model(original->config, load, cpu_allocator(), ModelOptions{16, 4, 0});
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const std::vector<float> embedding = embedding_of(**model);

  // Failing at the check (a tensor the config needs is not there): nothing written.
  const std::string last = "model.norm.weight";
  bool overwritten = true;
  Result<ModelSource> cut =
      open_model_source(scaled_checkpoint(dir.path(), "tiny-qwen3", 0.5f, last), {});
  ASSERT_TRUE(cut.ok());
  WeightLoader refused(cut->weights.get(), cpu_allocator(), DType::kF32, cpu);
  EXPECT_FALSE((*model)->update_weights(refused, overwritten).ok());
  EXPECT_FALSE(overwritten);
  EXPECT_EQ(embedding_of(**model), embedding);

  // The final norm's read fails: the embedding (loaded first) was already overwritten, and the
  // caller hears so.
  FailingRead broken(*next->weights, last);
  WeightLoader update(&broken, cpu_allocator(), DType::kF32, cpu);
  const Status failed = (*model)->update_weights(update, overwritten);
  test_util::expect_status(failed, StatusCode::kDataLoss, {"a read error in " + last});
  EXPECT_TRUE(overwritten);
  std::vector<float> scaled = embedding;
  for (float& v : scaled) v *= 0.5f;
  EXPECT_EQ(embedding_of(**model), scaled);
}

}  // namespace
}  // namespace sgl::model
