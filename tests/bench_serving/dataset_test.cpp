// Synthetic datasets: seeded determinism, lengths within the asked range, word-count prompts.
#include "bench_serving/dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

namespace sgl::bench_serving {
namespace {

int64_t count_words(const std::string& text) {
  std::istringstream in(text);
  int64_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

DatasetOptions random_options(uint64_t seed) {
  DatasetOptions o;
  o.random_input_len = 64;
  o.random_output_len = 128;
  o.random_range_ratio = 0.5;
  o.seed = seed;
  return o;
}

TEST(Dataset, SameSeedGivesTheSameRequests) {
  const SyntheticDataset a(random_options(7)), b(random_options(7)), c(random_options(8));
  int differing = 0;
  for (uint64_t i = 0; i < 100; ++i) {
    const DatasetRow ra = a.row(i), rb = b.row(i), rc = c.row(i);
    EXPECT_EQ(ra.prompt, rb.prompt);
    EXPECT_EQ(ra.prompt_len, rb.prompt_len);
    EXPECT_EQ(ra.output_len, rb.output_len);
    differing += ra.prompt != rc.prompt;
  }
  EXPECT_GT(differing, 95);  // another seed, other requests
}

TEST(Dataset, RowsDoNotDependOnTheOrderTheyAreDrawn) {
  const SyntheticDataset d(random_options(3));
  const DatasetRow late = d.row(41);
  for (uint64_t i = 0; i < 41; ++i) (void)d.row(i);
  EXPECT_EQ(d.row(41).prompt, late.prompt);
}

TEST(Dataset, RandomLengthsStayInTheRangeAndCoverIt) {
  const SyntheticDataset d(random_options(1));
  int64_t min_in = 1 << 30, max_in = 0, min_out = 1 << 30, max_out = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    const DatasetRow r = d.row(i);
    EXPECT_EQ(count_words(r.prompt), r.prompt_len);
    min_in = std::min(min_in, r.prompt_len);
    max_in = std::max(max_in, r.prompt_len);
    min_out = std::min(min_out, r.output_len);
    max_out = std::max(max_out, r.output_len);
  }
  EXPECT_EQ(min_in, 32);
  EXPECT_EQ(max_in, 64);
  EXPECT_EQ(min_out, 64);
  EXPECT_EQ(max_out, 128);
}

TEST(Dataset, RatioOneGivesExactLengthsAndRatioZeroStartsAtOne) {
  DatasetOptions o = random_options(5);
  o.random_range_ratio = 1.0;
  const DatasetRow exact = SyntheticDataset(o).row(9);
  EXPECT_EQ(exact.prompt_len, 64);
  EXPECT_EQ(exact.output_len, 128);
  o.random_range_ratio = 0.0;
  o.random_input_len = o.random_output_len = 2;
  for (uint64_t i = 0; i < 50; ++i) EXPECT_GE(SyntheticDataset(o).row(i).output_len, 1);
}

TEST(Dataset, ShareGptSyntheticIsLogNormalAndFitsTheContext) {
  DatasetOptions o;
  o.name = DatasetName::kShareGptSynthetic;
  o.sharegpt_context_len = 512;
  const SyntheticDataset d(o);
  std::vector<int64_t> inputs;
  for (uint64_t i = 0; i < 2000; ++i) {
    const DatasetRow r = d.row(i);
    EXPECT_LE(r.prompt_len + r.output_len, 512);
    EXPECT_GE(r.prompt_len, 4);
    EXPECT_GE(r.output_len, 4);
    inputs.push_back(r.prompt_len);
  }
  std::sort(inputs.begin(), inputs.end());
  // Median 160 before the context cut, which removes long prompts: a bit lower after it.
  EXPECT_GT(inputs[1000], 100);
  EXPECT_LT(inputs[1000], 170);
  o.sharegpt_output_len = 100;
  EXPECT_EQ(SyntheticDataset(o).row(3).output_len, 100);
}

TEST(Dataset, RejectsBadOptions) {
  DatasetOptions o;
  o.random_range_ratio = 1.5;
  EXPECT_FALSE(validate_dataset_options(o).ok());
  o = DatasetOptions();
  o.random_input_len = 0;
  EXPECT_FALSE(validate_dataset_options(o).ok());
  EXPECT_FALSE(parse_dataset_name("sharegpt").ok());
  EXPECT_TRUE(parse_dataset_name("sharegpt-synthetic").ok());
}

}  // namespace
}  // namespace sgl::bench_serving
