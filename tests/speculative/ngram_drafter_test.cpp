// The n-gram drafter against a brute-force reference on random sequences over small alphabets
// (many repeats), plus the cases a reader checks by eye.
#include "speculative/ngram_drafter.h"

#include <gtest/gtest.h>

#include <random>

#include "speculative/speculative_options.h"

namespace sgl::speculative {
namespace {

using Ids = std::vector<int32_t>;

TEST(NgramDraft, LongestRecurringSuffixItsLatestOccurrence) {
  // "a b c d | a b c" -> the suffix "a b c" occurred at 0..2, followed by "d a b".
  EXPECT_EQ(ngram_draft(Ids{1, 2, 3, 4, 1, 2, 3}, 3, 1, 4), (Ids{4, 1, 2}));
  // The latest occurrence wins: "x 7" occurs twice with different continuations.
  EXPECT_EQ(ngram_draft(Ids{9, 7, 1, 9, 7, 2, 5, 9, 7}, 2, 1, 3), (Ids{2, 5}));
  // A longer match beats a more recent shorter one.
  EXPECT_EQ(ngram_draft(Ids{5, 6, 7, 8, 0, 7, 3, 5, 6, 7}, 1, 1, 3), (Ids{8}));
  // Past the sequence's end the drafts repeat with the match's period.
  EXPECT_EQ(ngram_draft(Ids{4, 4}, 5, 1, 3), (Ids{4, 4, 4, 4, 4}));
  EXPECT_EQ(ngram_draft(Ids{1, 2, 3, 1, 2}, 5, 1, 3), (Ids{3, 1, 2, 3, 1}));
  EXPECT_EQ(ngram_draft(Ids{1, 2, 3}, 4, 1, 3), Ids{});     // nothing recurs
  EXPECT_EQ(ngram_draft(Ids{1, 2, 1, 2}, 4, 3, 3), Ids{});  // only windows of 3 tried
  EXPECT_EQ(ngram_draft(Ids{1, 2, 1, 2}, 0, 1, 3), Ids{});  // no drafts wanted
  EXPECT_EQ(ngram_draft(Ids{}, 4, 1, 3), Ids{});
}

// The definition, written the slow way.
Ids reference(const Ids& t, int32_t k, int32_t lo, int32_t hi) {
  const auto n = static_cast<int64_t>(t.size());
  for (int64_t w = hi; w >= lo; --w) {
    if (w > n - 1) continue;
    for (int64_t start = n - w - 1; start >= 0; --start) {
      bool same = true;
      for (int64_t j = 0; j < w; ++j) same = same && t[start + j] == t[n - w + j];
      if (!same) continue;
      Ids ext = t;  // the sequence continued by its drafts
      while (static_cast<int64_t>(ext.size()) < start + w + k) {
        ext.push_back(ext[ext.size() - static_cast<size_t>(n - start - w)]);
      }
      return Ids(ext.begin() + start + w, ext.begin() + start + w + k);
    }
  }
  return {};
}

TEST(NgramDraft, MatchesTheReferenceOnRandomSequences) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    Ids t(rng() % 40);
    const int32_t alphabet = 2 + static_cast<int32_t>(rng() % 5);
    for (int32_t& x : t) x = static_cast<int32_t>(rng() % alphabet);
    const int32_t lo = 1 + static_cast<int32_t>(rng() % 3),
                  hi = lo + static_cast<int32_t>(rng() % 5);
    const int32_t k = static_cast<int32_t>(rng() % 8);
    ASSERT_EQ(ngram_draft(t, k, lo, hi), reference(t, k, lo, hi)) << "trial " << trial;
  }
}

TEST(SpeculativeOptions, ParseAndValidate) {
  EXPECT_EQ(parse_speculative_algorithm("NGRAM").value(), SpeculativeAlgorithm::kNgram);
  EXPECT_EQ(parse_speculative_algorithm("ngram").value(), SpeculativeAlgorithm::kNgram);
  EXPECT_EQ(parse_speculative_algorithm("EAGLE3").value(), SpeculativeAlgorithm::kEagle3);
  EXPECT_EQ(parse_speculative_algorithm("eagle").value(), SpeculativeAlgorithm::kEagle);
  const auto standalone = parse_speculative_algorithm("STANDALONE");
  ASSERT_FALSE(standalone.ok());
  EXPECT_NE(standalone.status().message().find("not implemented"), std::string::npos);
  EXPECT_FALSE(parse_speculative_algorithm("MEDUSA").ok());
  SpeculativeOptions o;
  o.algorithm = SpeculativeAlgorithm::kNgram;
  EXPECT_TRUE(o.validate().ok());
  o.num_draft_tokens = 1;
  EXPECT_FALSE(o.validate().ok());
  o.num_draft_tokens = 8;
  o.ngram_min_match_window = 5;
  o.ngram_max_match_window = 4;
  EXPECT_FALSE(o.validate().ok());
  o.ngram_min_match_window = 1;
  o.draft_model_path = "/heads/eagle";  // NGRAM takes no draft model
  EXPECT_FALSE(o.validate().ok());
}

TEST(SpeculativeOptions, EagleChainsVerifyTheirStepsAndTheLastToken) {
  SpeculativeOptions o;
  o.algorithm = SpeculativeAlgorithm::kEagle;
  EXPECT_FALSE(o.validate().ok()) << "no draft model path";
  o.draft_model_path = "/heads/eagle";
  o.num_steps = 5;
  ASSERT_TRUE(o.validate().ok());
  EXPECT_EQ(o.num_draft_tokens, 6);
  EXPECT_TRUE(o.drafts_in_runner());
  o.num_draft_tokens = 8;
  const Status mismatch = o.validate(/*num_draft_tokens_set=*/true);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.message().find("--speculative-num-steps + 1 (6)"), std::string::npos);
  o.eagle_topk = 1;
  o.num_steps = 0;
  EXPECT_FALSE(o.validate().ok());
}

TEST(SpeculativeOptions, BenchAcceptLengthIsAChainsTokensPerVerify) {
  SpeculativeOptions o;
  o.algorithm = SpeculativeAlgorithm::kEagle;
  o.draft_model_path = "/heads/eagle";
  o.num_steps = 4;
  o.bench_accept_length = 5;  // every draft and the sample after them
  EXPECT_TRUE(o.validate().ok());
  o.bench_accept_length = 6;
  const Status over = o.validate(true);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.message().find("must be in [1, 5]"), std::string::npos) << over.message();
  o.bench_accept_length = -1;
  EXPECT_FALSE(o.validate(true).ok());
  o.bench_accept_length = 2;
  o.eagle_topk = 2;  // a tree has no one chain to accept
  const Status tree = o.validate();
  ASSERT_FALSE(tree.ok());
  EXPECT_NE(tree.message().find("--speculative-eagle-topk 1"), std::string::npos);
  o = SpeculativeOptions{};
  o.algorithm = SpeculativeAlgorithm::kNgram;
  o.bench_accept_length = 3;
  EXPECT_TRUE(o.validate().ok());
}

TEST(SpeculativeOptions, EagleTreesVerifyUpToStepsTimesTopkDrafts) {
  SpeculativeOptions o;
  o.algorithm = SpeculativeAlgorithm::kEagle3;
  o.draft_model_path = "/heads/eagle3";
  o.num_steps = 3;
  o.eagle_topk = 4;
  ASSERT_TRUE(o.validate().ok());
  EXPECT_EQ(o.num_draft_tokens, 8);  // the default, within 1 + 3 * 4
  o.num_draft_tokens = 13;
  EXPECT_TRUE(o.validate(true).ok());
  o.num_draft_tokens = 14;
  const Status too_many = o.validate(true);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.message().find("must be in [2, 13]"), std::string::npos) << too_many.message();
  o.num_draft_tokens = 1;
  EXPECT_FALSE(o.validate(true).ok());
  // A small tree cuts the default: 1 + 1 * 2.
  o = SpeculativeOptions{};
  o.algorithm = SpeculativeAlgorithm::kEagle;
  o.draft_model_path = "/heads/eagle";
  o.num_steps = 1;
  o.eagle_topk = 2;
  ASSERT_TRUE(o.validate().ok());
  EXPECT_EQ(o.num_draft_tokens, 3);
  // At most 64 tokens (a tree mask row), topk in [1, 10].
  o.num_steps = 20;
  o.eagle_topk = 10;
  o.num_draft_tokens = 65;
  EXPECT_FALSE(o.validate(true).ok());
  o.num_draft_tokens = 64;
  EXPECT_TRUE(o.validate(true).ok());
  o.eagle_topk = 11;
  const Status topk = o.validate(true);
  ASSERT_FALSE(topk.ok());
  EXPECT_NE(topk.message().find("--speculative-eagle-topk must be in [1, 10]"), std::string::npos);
  o.eagle_topk = 0;
  EXPECT_FALSE(o.validate(true).ok());
}

}  // namespace
}  // namespace sgl::speculative
