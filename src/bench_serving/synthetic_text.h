// Synthetic prompt text: words from a fixed list, so that a prompt of N words is about N tokens.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace sgl::bench_serving {

// A small counter-based random generator (splitmix64): the same (seed, stream) gives the same
// draws on every platform, unlike std:: distributions whose algorithms are unspecified.
class SplitMix64 {
 public:
  // Seeds from (seed, stream) so that each request index gets its own independent sequence.
  SplitMix64(uint64_t seed, uint64_t stream);

  uint64_t next();
  // Uniform in [0, 1).
  double uniform();
  // Uniform integer in [lo, hi] (inclusive); lo <= hi.
  int64_t uniform_int(int64_t lo, int64_t hi);
  // Standard normal (Box-Muller).
  double normal();
  // Exponential with the given mean.
  double exponential(double mean);

 private:
  uint64_t state_;
};

// `num_words` words, separated by single spaces, drawn from common English words that are one
// token each in the stories260K test tokenizer and (with their leading space) in the usual
// large BPE vocabularies (Llama, Qwen, GPT): a prompt of N words is N tokens plus any BOS.
std::string synthetic_text(int64_t num_words, SplitMix64& rng);

}  // namespace sgl::bench_serving
