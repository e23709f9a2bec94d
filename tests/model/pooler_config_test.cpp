// read_pooler_config: sentence-transformers' modules.json and Pooling config -> PoolerConfig,
// SGLang's default without them, and clear errors for what is not supported or malformed.
#include "model/pooler_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace sgl::model {
namespace {

constexpr int64_t kHidden = 128;

class PoolerConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("pooler_config_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "1_Pooling");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  // modules.json: Transformer, Pooling (at 1_Pooling), then `tail` (more module objects).
  void write_modules(const std::string& tail = "") {
    write(
        "modules.json",
        R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
              {"idx": 1, "name": "1", "path": "1_Pooling",
               "type": "sentence_transformers.models.Pooling"})" +
            tail + "]");
  }
  void write_pooling(const std::string& fields) {
    write("1_Pooling/config.json", R"({"word_embedding_dimension": 128, )" + fields + "}");
  }
  static constexpr const char* kNormalize =
      R"(, {"idx": 2, "name": "2", "path": "2_Normalize",
            "type": "sentence_transformers.models.Normalize"})";

  std::filesystem::path dir_;
};

TEST_F(PoolerConfigTest, WithoutModulesJsonLastTokenNormalised) {
  auto c = read_pooler_config(dir_, kHidden);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->type, PoolingType::kLast);
  EXPECT_TRUE(c->normalize);
  // A .gguf file path: no directory to hold the modules.
  auto gguf = read_pooler_config(dir_ / "model.gguf", kHidden);
  ASSERT_TRUE(gguf.ok());
  EXPECT_EQ(gguf->type, PoolingType::kLast);
}

TEST_F(PoolerConfigTest, ReadsLastTokenAndMeanWithAndWithoutNormalize) {
  write_modules(kNormalize);
  write_pooling(R"("pooling_mode_lasttoken": true, "pooling_mode_mean_tokens": false)");
  auto last = read_pooler_config(dir_, kHidden);
  ASSERT_TRUE(last.ok()) << last.status().to_string();
  EXPECT_EQ(last->type, PoolingType::kLast);
  EXPECT_TRUE(last->normalize);

  write_modules();
  write_pooling(R"("pooling_mode_mean_tokens": true, "pooling_mode_cls_token": false)");
  auto mean = read_pooler_config(dir_, kHidden);
  ASSERT_TRUE(mean.ok()) << mean.status().to_string();
  EXPECT_EQ(mean->type, PoolingType::kMean);
  EXPECT_FALSE(mean->normalize);
}

// The error a config gives: its code and a piece of its message.
void expect_error(const Result<PoolerConfig>& c, StatusCode code, const std::string& words) {
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), code) << c.status().to_string();
  EXPECT_NE(c.status().message().find(words), std::string::npos) << c.status().to_string();
}

TEST_F(PoolerConfigTest, UnsupportedPoolingIsNamed) {
  write_modules();
  write_pooling(R"("pooling_mode_cls_token": true)");
  expect_error(read_pooler_config(dir_, kHidden), StatusCode::kUnimplemented,
               "pooling_mode_cls_token is not supported");
  write_pooling(R"("pooling_mode_max_tokens": true)");
  expect_error(read_pooler_config(dir_, kHidden), StatusCode::kUnimplemented,
               "pooling_mode_max_tokens");
  write_pooling(R"("pooling_mode_lasttoken": true, "pooling_mode_mean_tokens": true)");
  expect_error(read_pooler_config(dir_, kHidden), StatusCode::kUnimplemented, "together");
  write_pooling(R"("pooling_mode_mean_tokens": true, "include_prompt": false)");
  expect_error(read_pooler_config(dir_, kHidden), StatusCode::kUnimplemented, "include_prompt");
}

TEST_F(PoolerConfigTest, UnsupportedModulesAreNamed) {
  write_pooling(R"("pooling_mode_lasttoken": true)");
  write_modules(R"(, {"idx": 2, "path": "2_Dense", "type": "sentence_transformers.models.Dense"})");
  expect_error(read_pooler_config(dir_, kHidden), StatusCode::kUnimplemented,
               "sentence_transformers.models.Dense");
  // Normalize before Pooling, or no Pooling at all.
  write("modules.json",
        R"([{"type": "sentence_transformers.models.Transformer"},
            {"type": "sentence_transformers.models.Normalize"}])");
  expect_error(read_pooler_config(dir_, kHidden), StatusCode::kUnimplemented, "Normalize");
  write("modules.json", R"([{"type": "sentence_transformers.models.Transformer"}])");
  expect_error(read_pooler_config(dir_, kHidden), StatusCode::kUnimplemented, "no Pooling module");
}

TEST_F(PoolerConfigTest, MalformedFilesAreInvalid) {
  write("modules.json", "[{");
  expect_error(read_pooler_config(dir_, kHidden), StatusCode::kInvalidArgument, "malformed JSON");
  write("modules.json", "{}");
  expect_error(read_pooler_config(dir_, kHidden), StatusCode::kInvalidArgument, "list of modules");
  write_modules();
  write_pooling(R"("pooling_mode_lasttoken": "yes")");
  expect_error(read_pooler_config(dir_, kHidden), StatusCode::kInvalidArgument,
               "'pooling_mode_lasttoken' must be a boolean");
  write("1_Pooling/config.json",
        R"({"word_embedding_dimension": 64, "pooling_mode_lasttoken": true})");
  expect_error(read_pooler_config(dir_, kHidden), StatusCode::kInvalidArgument,
               "word_embedding_dimension 64");
  write("modules.json",
        R"([{"type": "sentence_transformers.models.Transformer"},
            {"path": "../1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
  expect_error(read_pooler_config(dir_, kHidden), StatusCode::kInvalidArgument,
               "leaves the model directory");
  std::filesystem::remove(dir_ / "1_Pooling" / "config.json");
  write_modules();
  expect_error(read_pooler_config(dir_, kHidden), StatusCode::kNotFound, "config.json");
}

}  // namespace
}  // namespace sgl::model
