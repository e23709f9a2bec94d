// Encode memory: the peak heap growth of tokenizing 4 MiB of mixed text (SGL_ENCODE_MEMORY_MIB
// to change it) stays within a small multiple of the text's size (tests/heap/heap_peak.h counts
// every allocation of this binary). Measured 2.9-6.0x; the old encoder peaked at 7.8-55x
// (docs/perf-log/2026-11-25-tokenize-memory.md).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "heap/heap_peak.h"
#include "mixed_text.h"
#include "test_data.h"
#include "tokenizer/tokenizer.h"

namespace sgl::tokenizer {
namespace {

struct Measured {
  int64_t peak = 0;
  double seconds = 0;
  size_t tokens = 0;
};

Measured measure_encode(const Tokenizer& tok, const std::string& text) {
  // A first pass fills the word cache (bounded, not proportional to the text); the second pass
  // is measured.
  (void)tok.encode(text, {});
  const auto start = std::chrono::steady_clock::now();
  test::HeapPeak peak;
  const std::vector<int32_t> ids = tok.encode(text, {});
  Measured m;
  m.peak = peak.peak_growth();
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.tokens = ids.size();
  return m;
}

size_t text_bytes() {
  const char* mb = std::getenv("SGL_ENCODE_MEMORY_MIB");
  return (mb != nullptr ? std::strtoul(mb, nullptr, 10) : 4) << 20;
}

class EncodeMemoryTest : public ::testing::TestWithParam<const char*> {};

TEST_P(EncodeMemoryTest, PeakIsASmallMultipleOfTheText) {
  auto tok = Tokenizer::from_dir(test::testdata_dir() / "tokenizers" / GetParam());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const std::string text = test::mixed_text(text_bytes());
  const Measured m = measure_encode(**tok, text);
  const double factor = static_cast<double>(m.peak) / static_cast<double>(text.size());
  std::printf("%s: %zu bytes, %zu tokens, peak +%lld bytes (%.2fx), %.3f s\n", GetParam(),
              text.size(), m.tokens, static_cast<long long>(m.peak), factor, m.seconds);
  // The returned ids alone are 4 bytes a token: a smaller peak would mean nothing was counted.
  EXPECT_GE(m.peak, static_cast<int64_t>(4 * m.tokens));
  EXPECT_LE(factor, 7.0);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, EncodeMemoryTest,
                         ::testing::Values("llama3_1", "qwen3", "llama2", "gpt2"));

}  // namespace
}  // namespace sgl::tokenizer
