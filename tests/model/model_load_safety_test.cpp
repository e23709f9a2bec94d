// Hostile and broken models through ModelRunner::create (what the apps load with): absurd
// hyper-parameters, checkpoints that disagree with their config, models larger than memory,
// failed allocations, sliding windows and bad paths all end in a clear Status (never an abort),
// and a model that fails its checks has nothing allocated for it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gguf_test_util.h"
#include "model/eagle_draft_model.h"
#include "model/model_registry.h"
#include "model/model_source.h"
#include "model/weight_loader.h"
#include "model_test_util.h"
#include "runner/model_runner.h"

namespace sgl::model {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using test_util::expect_status;
using test_util::GgufRawValue;
using test_util::GgufWriter;
using test_util::TempDir;
using test_util::testdata_models_dir;

// Copies the test model `name` into `dir` and applies `edit` to its config.json.
fs::path copy_model(const TempDir& dir, const std::string& name,
                    const std::function<void(Json&)>& edit = {}) {
  const fs::path to = dir.path() / name;
  fs::create_directories(to);
  for (const auto& entry : fs::directory_iterator(testdata_models_dir() / name)) {
    fs::copy_file(entry.path(), to / entry.path().filename(), fs::copy_options::overwrite_existing);
    fs::permissions(to / entry.path().filename(), fs::perms::owner_write, fs::perm_options::add);
  }
  if (edit) {
    std::ifstream in(to / "config.json");
    Json config = Json::parse(in);
    edit(config);
    std::ofstream(to / "config.json", std::ios::trunc) << config.dump();
  }
  return to;
}

runner::ModelRunnerOptions small_options(const std::string& load_format = "auto") {
  runner::ModelRunnerOptions options;
  options.max_num_tokens = 64;
  options.max_batch_size = 4;
  options.num_kv_slots = 256;
  options.load_format = load_format;
  return options;
}

Status create(const fs::path& path, const runner::ModelRunnerOptions& options = small_options()) {
  return runner::ModelRunner::create(path, options).status();
}

// A GGUF llama of hidden 64, 2 layers, 4 heads (head_dim 16), vocab 8, with every tensor a
// model needs (zeros), and `kvs` overriding its metadata.
std::string llama_gguf(const std::vector<std::pair<std::string, GgufRawValue>>& kvs = {}) {
  std::vector<std::pair<std::string, GgufRawValue>> meta = {
      {"general.architecture", test_util::gguf_string("llama")},
      {"llama.context_length", test_util::gguf_u32(256)},
      {"llama.embedding_length", test_util::gguf_u32(64)},
      {"llama.block_count", test_util::gguf_u32(2)},
      {"llama.feed_forward_length", test_util::gguf_u32(128)},
      {"llama.attention.head_count", test_util::gguf_u32(4)},
      {"llama.attention.head_count_kv", test_util::gguf_u32(2)},
      {"llama.attention.layer_norm_rms_epsilon", test_util::gguf_f32(1e-5f)},
  };
  for (const auto& [key, value] : kvs) {
    bool replaced = false;
    for (auto& kv : meta) {
      if (kv.first == key) kv.second = value, replaced = true;
    }
    if (!replaced) meta.emplace_back(key, value);
  }
  GgufWriter w;
  for (const auto& [key, value] : meta) w.kv(key, value);
  auto f32 = [&](const std::string& name, std::vector<uint64_t> dims) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    w.tensor(name, dims, /*F32=*/0, std::string(n * 4, '\0'));
  };
  f32("token_embd.weight", {64, 8});
  f32("output_norm.weight", {64});
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    f32(p + "attn_norm.weight", {64});
    f32(p + "attn_q.weight", {64, 64});
    f32(p + "attn_k.weight", {64, 32});
    f32(p + "attn_v.weight", {64, 32});
    f32(p + "attn_output.weight", {64, 64});
    f32(p + "ffn_norm.weight", {64});
    f32(p + "ffn_gate.weight", {64, 128});
    f32(p + "ffn_up.weight", {64, 128});
    f32(p + "ffn_down.weight", {128, 64});
  }
  return w.bytes();
}

// Host allocator that counts what it hands out.
class CountingAllocator final : public Allocator {
 public:
  Device device() const override { return Device::cpu(); }
  void* allocate(size_t bytes) override {
    allocated_ += bytes;
    return cpu_allocator().allocate(bytes);
  }
  void deallocate(void* ptr) override { cpu_allocator().deallocate(ptr); }
  size_t allocated() const { return allocated_; }

 private:
  std::atomic<size_t> allocated_{0};
};

// create_model over the checkpoint at `path` (real weights unless `dummy`), counting allocations.
Status create_counting(const fs::path& path, bool dummy, CountingAllocator& allocator) {
  Result<ModelSource> source = open_model_source(path, {.open_weights = !dummy});
  if (!source.ok()) return source.status();
  WeightLoader loader(source->weights.get(), allocator, DType::kF32, backend::Stream{});
  return create_model(source->config, loader, allocator, ModelOptions{64, 64, 0}).status();
}

// ---- 1. hyper-parameters ----

TEST(ModelLoadSafetyTest, AbsurdConfigIsAnErrorNotAnAbort) {
  TempDir dir;
  const std::vector<std::pair<const char*, Json>> cases = {
      {"vocab_size", 1e9},
      {"num_hidden_layers", int64_t{1} << 31},
      {"hidden_size", int64_t{1} << 40},
      {"max_position_embeddings", int64_t{1} << 31},
      {"intermediate_size", int64_t{1} << 40},
      {"head_dim", int64_t{1} << 30},
      {"num_attention_heads", 0},
      {"rms_norm_eps", 5.0},
  };
  for (const auto& [field, value] : cases) {
    SCOPED_TRACE(std::string(field) + " = " + value.dump());
    const fs::path model =
        copy_model(dir, "stories260K", [&, f = field](Json& c) { c[f] = value; });
    expect_status(create(model), StatusCode::kInvalidArgument,
                  {"config.json", std::string("'") + field + "'"});
  }
}

TEST(ModelLoadSafetyTest, AbsurdGgufMetadataIsAnErrorNotAnAbort) {
  TempDir dir;
  ASSERT_TRUE(create(dir.write("ok.gguf", llama_gguf())).ok());
  const std::vector<std::pair<std::string, GgufRawValue>> cases = {
      {"llama.block_count", test_util::gguf_u64(uint64_t{1} << 31)},
      {"llama.context_length", test_util::gguf_u64(uint64_t{1} << 31)},
      {"llama.feed_forward_length", test_util::gguf_u64(uint64_t{1} << 40)},
      {"llama.attention.key_length", test_util::gguf_u64(uint64_t{1} << 30)},
  };
  for (const auto& [key, value] : cases) {
    SCOPED_TRACE(key);
    const fs::path model = dir.write("absurd.gguf", llama_gguf({{key, value}}));
    expect_status(create(model), StatusCode::kInvalidArgument, {"absurd.gguf", "'" + key + "'"});
  }
  // A block_count below the file's layers would run a truncated network.
  const fs::path short_model =
      dir.write("short.gguf", llama_gguf({{"llama.block_count", test_util::gguf_u32(1)}}));
  expect_status(create(short_model), StatusCode::kInvalidArgument,
                {"short.gguf", "belongs to layer 1", "num_hidden_layers 1"});
}

// A checkpoint that does not match its config fails before a single byte is allocated: every
// tensor is checked first (it used to load every layer before finding the missing one).
TEST(ModelLoadSafetyTest, CheckpointNotMatchingConfigAllocatesNothing) {
  TempDir dir;
  const std::vector<std::pair<std::function<void(Json&)>, std::vector<std::string>>> cases = {
      {[](Json& c) { c["num_hidden_layers"] = 6; }, {"model.layers.5.", "missing"}},
      {[](Json& c) { c["intermediate_size"] = 100; },
       {"model.layers.0.mlp.gate_proj.weight", "[172, 64]", "[100, 64]"}},
      {[](Json& c) { c["vocab_size"] = 4000000; }, {"embed_tokens", "[512, 64]", "[4000000, 64]"}},
      // Fewer layers than the checkpoint used to load silently as a truncated network.
      {[](Json& c) { c["num_hidden_layers"] = 4; },
       {"'model.layers.4.", "belongs to layer 4", "num_hidden_layers 4"}},
  };
  for (const auto& [edit, message] : cases) {
    const fs::path model = copy_model(dir, "stories260K", edit);
    CountingAllocator allocator;
    const Status s = create_counting(model, /*dummy=*/false, allocator);
    EXPECT_FALSE(s.ok());
    for (const std::string& m : message) {
      EXPECT_NE(s.message().find(m), std::string::npos) << m << " not in " << s.to_string();
    }
    EXPECT_EQ(allocator.allocated(), 0u) << s.to_string();
  }
  // The intact model allocates (the counter works).
  CountingAllocator allocator;
  ASSERT_TRUE(create_counting(copy_model(dir, "stories260K"), false, allocator).ok());
  EXPECT_GT(allocator.allocated(), 1000000u);
}

// A config inside the bounds whose model cannot fit in memory (here ~780 TiB of weights) is
// refused with the sizes, before anything is allocated (it used to abort in the allocator).
TEST(ModelLoadSafetyTest, ModelLargerThanMemoryIsRefused) {
  TempDir dir;
  const fs::path config = dir.write("huge.json", R"({
    "architectures": ["LlamaForCausalLM"], "vocab_size": 4194304, "hidden_size": 65536,
    "intermediate_size": 1048576, "num_hidden_layers": 1024, "num_attention_heads": 64,
    "head_dim": 1024, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5})");
  expect_status(create(config, small_options("dummy")), StatusCode::kResourceExhausted,
                {"the model needs", "GiB on cpu", "weights", "of memory"});
  CountingAllocator allocator;
  EXPECT_FALSE(create_counting(config, /*dummy=*/true, allocator).ok());
  EXPECT_EQ(allocator.allocated(), 0u);
}

// ---- 2. allocation failures ----

size_t address_space_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  statm >> pages;
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Runs in a death-test child: caps the address space, loads `model`, prints the status and
// exits 0 when loading failed as out of memory.
[[noreturn]] void create_with_capped_address_space(const fs::path& model) {
  const rlim_t cap = address_space_bytes() + (size_t{128} << 20);
  const rlimit limit{cap, cap};
  setrlimit(RLIMIT_AS, &limit);
  const Status s = create(model);
  std::fprintf(stderr, "%s\n", s.to_string().c_str());
  std::_Exit(s.code() == StatusCode::kResourceExhausted ? 0 : 1);
}

// Loads tiny-llama with a 2^22-position RoPE table (512 MiB) in a child whose address space is
// capped 128 MiB above what it uses: the table's allocation throws std::bad_alloc, which
// ModelRunner::create turns into an error (it used to end the process).
TEST(ModelLoadSafetyTest, AllocationFailureIsAnErrorNotAnAbort) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan reserves terabytes of address space; RLIMIT_AS cannot apply";
#endif
  TempDir dir;
  const fs::path model = copy_model(
      dir, "tiny-llama", [](Json& c) { c["max_position_embeddings"] = int64_t{1} << 22; });
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: no inherited threads
  setenv("OMP_NUM_THREADS", "1", 1);               // few thread stacks in the capped space
  EXPECT_EXIT(create_with_capped_address_space(model), ::testing::ExitedWithCode(0),
              "out of memory loading the model: .*tiny-llama");
}

// ---- 5. sliding windows ----

TEST(ModelLoadSafetyTest, SlidingWindowRefusedUnlessTheContextFitsIt) {
  TempDir dir;
  const fs::path mistral = copy_model(dir, "tiny-llama", [](Json& c) {
    c["architectures"] = {"MistralForCausalLM"};
    c["model_type"] = "mistral";
    c["sliding_window"] = 64;  // max_position_embeddings is 512
  });
  expect_status(create(mistral), StatusCode::kUnimplemented,
                {"sliding_window 64", "context length 512", "--context-length 64"});
  runner::ModelRunnerOptions fits = small_options();
  fits.context_length = 64;
  EXPECT_TRUE(create(mistral, fits).ok()) << create(mistral, fits).to_string();
  fits.context_length = 65;
  expect_status(create(mistral, fits), StatusCode::kUnimplemented, {"context length 65"});

  // Qwen2: only with use_sliding_window (and a layer at or past max_window_layers).
  auto qwen = [&](bool use) {
    return copy_model(dir, "tiny-qwen2", [use](Json& c) {
      c["use_sliding_window"] = use;
      c["sliding_window"] = 64;
      c["max_window_layers"] = 0;
      c.erase("layer_types");
    });
  };
  EXPECT_TRUE(create(qwen(false)).ok());
  expect_status(create(qwen(true)), StatusCode::kUnimplemented, {"--context-length 64"});
  fits.context_length = 64;
  EXPECT_TRUE(create(qwen(true), fits).ok());

  // GGUF: <arch>.attention.sliding_window.
  const fs::path gguf = dir.write(
      "swa.gguf", llama_gguf({{"llama.attention.sliding_window", test_util::gguf_u32(32)}}));
  expect_status(create(gguf), StatusCode::kUnimplemented,
                {"swa.gguf", "sliding_window 32", "context length 256", "--context-length 32"});
  fits.context_length = 32;
  EXPECT_TRUE(create(gguf, fits).ok());
}

// ---- 4. paths and truncated files: the message says what is wrong ----

TEST(ModelLoadSafetyTest, BadPathsAreNamedForWhatTheyAre) {
  TempDir dir;
  const std::string absent = (dir.path() / "absent").string();
  expect_status(create(absent), StatusCode::kNotFound, {"no such file or directory: " + absent});

  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const int holder = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);  // no open of it may block
  expect_status(create(fifo), StatusCode::kInvalidArgument,
                {"not a regular file: " + fifo.string()});
  fs::create_directories(dir.path() / "m");
  fs::create_symlink(fifo, dir.path() / "m" / "config.json");
  expect_status(create(dir.path() / "m"), StatusCode::kInvalidArgument,
                {"not a regular file: " + (dir.path() / "m" / "config.json").string()});
  ::close(holder);

  expect_status(create("/dev/zero"), StatusCode::kInvalidArgument,
                {"not a regular file: /dev/zero"});
  fs::create_directories(dir.path() / "model.gguf");
  expect_status(create(dir.path() / "model.gguf"), StatusCode::kInvalidArgument,
                {"not a regular file: " + (dir.path() / "model.gguf").string()});
  fs::create_directories(dir.path() / "empty");
  expect_status(create(dir.path() / "empty"), StatusCode::kNotFound,
                {(dir.path() / "empty").string(), "not a model directory", "no config.json"});
}

// An EAGLE draft head's config.json is read as every config is: an oversized file is refused
// before it is read, a FIFO instead of blocking, a missing one by name.
TEST(ModelLoadSafetyTest, DraftHeadConfigIsReadBounded) {
  TempDir dir;
  const fs::path absent = dir.path() / "absent" / "config.json";
  expect_status(
      load_eagle_draft_config(dir.path() / "absent").status(), StatusCode::kNotFound,
      {"cannot read the draft head's config", "no such file or directory: " + absent.string()});
  fs::create_directories(dir.path() / "big");
  const fs::path big = dir.write("big/config.json", "{}");
  fs::resize_file(big, kMaxConfigFileBytes + 1);  // sparse: nothing is written
  expect_status(load_eagle_draft_config(dir.path() / "big").status(), StatusCode::kInvalidArgument,
                {"cannot read the draft head's config", big.string(), "more than the 16777216"});
  fs::create_directories(dir.path() / "fifo");
  const fs::path fifo = dir.path() / "fifo" / "config.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const int holder = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);  // a reader would wait forever
  expect_status(load_eagle_draft_config(dir.path() / "fifo").status(), StatusCode::kInvalidArgument,
                {"not a regular file: " + fifo.string()});
  ::close(holder);
}

TEST(ModelLoadSafetyTest, TruncatedFilesSayTruncated) {
  TempDir dir;
  const fs::path model = copy_model(dir, "stories260K");
  const fs::path weights = model / "model.safetensors";
  fs::resize_file(weights, 100);  // mid-header
  expect_status(
      create(model), StatusCode::kDataLoss,
      {"truncated safetensors file " + weights.string(), "header says at least", "file has 100"});
  fs::copy_file(testdata_models_dir() / "stories260K" / "model.safetensors", weights,
                fs::copy_options::overwrite_existing);
  fs::resize_file(weights, 1000000);  // mid-data
  expect_status(create(model), StatusCode::kDataLoss,
                {"truncated safetensors file " + weights.string(), "header says 1044992 bytes",
                 "file has 1000000"});

  const std::string gguf = llama_gguf();
  const fs::path header_cut = dir.write("header_cut.gguf", gguf.substr(0, 200));
  expect_status(create(header_cut), StatusCode::kDataLoss,
                {"truncated GGUF file " + header_cut.string(), "file has 200"});
  const fs::path data_cut = dir.write("data_cut.gguf", gguf.substr(0, gguf.size() - 100));
  expect_status(create(data_cut), StatusCode::kDataLoss,
                {"truncated GGUF file " + data_cut.string(), "runs past the end"});
}

}  // namespace
}  // namespace sgl::model
