// Synthetic prompt text and the deterministic random generator behind the datasets.
#include "bench_serving/synthetic_text.h"

#include <array>
#include <cmath>
#include <numbers>

namespace sgl::bench_serving {
namespace {

// NOTE: checked against the stories260K tokenizer (512 entries): each is a single "▁word" token
// there. Changing the list changes every benchmark's prompts; keep it stable.
constexpr std::array<const char*, 40> kWords = {
    "the",  "and",  "was",    "her",    "day",   "she",   "you",   "big",  "had",  "for",
    "saw",  "but",  "to",     "he",     "it",    "in",    "be",    "up",   "on",   "of",
    "we",   "so",   "do",     "with",   "said",  "play",  "that",  "they", "time", "want",
    "very", "upon", "friend", "little", "there", "happy", "named", "his",  "mom",  "Once"};

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

SplitMix64::SplitMix64(uint64_t seed, uint64_t stream)
    : state_(mix(seed ^ mix(stream + 0x9e3779b97f4a7c15ULL))) {}

uint64_t SplitMix64::next() {
  state_ += 0x9e3779b97f4a7c15ULL;
  return mix(state_);
}

double SplitMix64::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

int64_t SplitMix64::uniform_int(int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  // NOTE: span == 0 means the full 64-bit range; the modulo bias is negligible for our spans.
  return span == 0 ? static_cast<int64_t>(next()) : lo + static_cast<int64_t>(next() % span);
}

double SplitMix64::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]: log() stays finite
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double SplitMix64::exponential(double mean) { return -mean * std::log(1.0 - uniform()); }

std::string synthetic_text(int64_t num_words, SplitMix64& rng) {
  std::string text;
  for (int64_t i = 0; i < num_words; ++i) {
    if (i > 0) text += ' ';
    text += kWords[static_cast<size_t>(rng.uniform_int(0, kWords.size() - 1))];
  }
  return text;
}

}  // namespace sgl::bench_serving
