// BpeModel on toy vocabularies (expected ids from HF tokenizers' models.BPE).
#include "tokenizer/bpe_model.h"

#include <gtest/gtest.h>

namespace sgl::tokenizer {
namespace {

using Ids = std::vector<int32_t>;

std::unique_ptr<BpeModel> make(Vocab vocab, std::vector<BpeModel::Merge> merges,
                               BpeOptions options) {
  auto model = BpeModel::create(std::move(vocab), merges, std::move(options));
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  return model.ok() ? std::move(model).value() : nullptr;
}

Ids tokenize(const BpeModel& model, std::string_view word) {
  Ids ids;
  model.tokenize(word, ids);
  return ids;
}

Vocab toy_vocab() {
  return {{"<unk>", 0}, {"a", 1}, {"b", 2}, {"ab", 3}, {"aa", 4}, {"aaa", 5}, {"<0x63>", 6}};
}
const std::vector<BpeModel::Merge> kToyMerges = {{"a", "b"}, {"a", "a"}, {"aa", "a"}};

TEST(BpeModelTest, MergesByRankThenPosition) {
  BpeOptions options;
  options.unk_token = "<unk>";
  options.fuse_unk = true;
  auto model = make(toy_vocab(), kToyMerges, options);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(tokenize(*model, "ab"), Ids{3});
  EXPECT_EQ(tokenize(*model, "aaa"), Ids{5});
  EXPECT_EQ(tokenize(*model, "aaaa"), (Ids{4, 4}));
  EXPECT_EQ(tokenize(*model, "abab"), (Ids{3, 3}));
  EXPECT_EQ(tokenize(*model, "accb"), (Ids{1, 0, 2}));  // fused unk
  EXPECT_EQ(tokenize(*model, "cc"), Ids{0});
  EXPECT_EQ(tokenize(*model, "aaaa"), (Ids{4, 4}));  // cached
  EXPECT_EQ(model->num_merges(), 3u);
  EXPECT_EQ(model->id_limit(), 7);
  EXPECT_EQ(*model->id_to_token(3), "ab");
  EXPECT_EQ(model->id_to_token(7), nullptr);
  EXPECT_EQ(model->token_to_id("aa"), 4);
}

TEST(BpeModelTest, ByteFallbackKeepsPendingUnkOrder) {
  BpeOptions options;
  options.unk_token = "<unk>";
  options.byte_fallback = true;
  auto model = make(toy_vocab(), kToyMerges, options);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(tokenize(*model, "acc"), (Ids{1, 6, 6}));
  EXPECT_EQ(tokenize(*model, "dd"), (Ids{0, 0}));
  // NOTE: HF adds byte tokens before flushing a pending unk.
  EXPECT_EQ(tokenize(*model, "cdc"), (Ids{6, 6, 0}));
}

TEST(BpeModelTest, NoUnkDropsUnknownCharacters) {
  auto model = make(toy_vocab(), kToyMerges, BpeOptions{});
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(tokenize(*model, "xaby"), Ids{3});
}

TEST(BpeModelTest, ContinuingSubwordPrefixAndSuffix) {
  Vocab vocab = {{"a", 0},     {"##b", 1},   {"##c", 2},   {"ab", 3},    {"abc", 4},
                 {"[UNK]", 5}, {"c</w>", 6}, {"b</w>", 7}, {"ab</w>", 8}};
  BpeOptions prefix;
  prefix.unk_token = "[UNK]";
  prefix.continuing_subword_prefix = "##";
  auto with_prefix = make(vocab, {{"a", "##b"}, {"ab", "##c"}}, prefix);
  ASSERT_NE(with_prefix, nullptr);
  EXPECT_EQ(tokenize(*with_prefix, "ab"), Ids{3});
  EXPECT_EQ(tokenize(*with_prefix, "abc"), Ids{4});
  EXPECT_EQ(tokenize(*with_prefix, "abcb"), (Ids{4, 1}));
  EXPECT_EQ(tokenize(*with_prefix, "ba"), (Ids{5, 5}));

  BpeOptions suffix;
  suffix.unk_token = "[UNK]";
  suffix.end_of_word_suffix = "</w>";
  auto with_suffix = make(vocab, {{"a", "b</w>"}}, suffix);
  ASSERT_NE(with_suffix, nullptr);
  EXPECT_EQ(tokenize(*with_suffix, "ab"), Ids{8});
  EXPECT_EQ(tokenize(*with_suffix, "ac"), (Ids{0, 6}));
  EXPECT_EQ(tokenize(*with_suffix, "b"), Ids{7});
}

TEST(BpeModelTest, IgnoreMerges) {
  Vocab vocab = {{"a", 0}, {"b", 1}, {"c", 2}, {"bc", 3}, {"abc", 4}};
  BpeOptions options;
  options.ignore_merges = true;
  auto model = make(vocab, {{"b", "c"}}, options);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(tokenize(*model, "abc"), Ids{4});  // in the vocab although no merge builds it
  EXPECT_EQ(tokenize(*model, "abcc"), (Ids{0, 3, 2}));
}

TEST(BpeModelTest, SentencepieceChunkingMatchesWholeWord) {
  // "▁" only starts tokens, so long words are cut before each "▁"; the result must equal the
  // uncut BPE (checked against a model whose vocab defeats the cut).
  const std::string m = "\xE2\x96\x81";
  Vocab vocab = {{m, 0}, {"a", 1}, {"b", 2}, {m + "a", 3}, {m + "ab", 4}, {"ab", 5}, {m + m, 6}};
  std::vector<BpeModel::Merge> merges = {{m, "a"}, {"a", "b"}, {m + "a", "b"}, {m, m}};
  auto chunked = make(vocab, merges, BpeOptions{});
  Vocab uncut_vocab = vocab;
  uncut_vocab.emplace("b" + m, 7);  // a token with "▁" inside disables chunking
  auto uncut = make(uncut_vocab, merges, BpeOptions{});
  ASSERT_NE(chunked, nullptr);
  ASSERT_NE(uncut, nullptr);
  std::string word;
  for (int i = 0; i < 300; ++i) word += (i % 3 == 0 ? m : i % 3 == 1 ? "a" : "b");
  word += m + m + m + "ab" + m;
  EXPECT_EQ(tokenize(*chunked, word), tokenize(*uncut, word));
}

TEST(BpeModelTest, BadMergesAreErrors) {
  auto missing = BpeModel::create(toy_vocab(), {{"a", "b"}, {"b", "zz"}}, BpeOptions{});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("model.merges[1]"), std::string::npos);
  EXPECT_NE(missing.status().message().find("'zz'"), std::string::npos);
  auto no_result = BpeModel::create(toy_vocab(), {{"b", "a"}}, BpeOptions{});
  ASSERT_FALSE(no_result.ok());
  EXPECT_NE(no_result.status().message().find("'ba'"), std::string::npos);
  auto huge_id = BpeModel::create({{"a", 1 << 30}}, {}, BpeOptions{});
  EXPECT_FALSE(huge_id.ok());
}

}  // namespace
}  // namespace sgl::tokenizer
