// Helpers for the grammar tests: compiling, full matches, random walks through a matcher.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <random>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"

namespace sgl::grammar::test {

inline std::shared_ptr<const CompiledGrammar> must_compile(
    Grammar g, std::shared_ptr<const TokenizerInfo> t = nullptr) {
  auto c = CompiledGrammar::compile(std::move(g), std::move(t));
  if (!c.ok()) throw std::runtime_error(c.status().to_string());
  return *c;
}

// The whole string is in the language.
inline bool full_match(const std::shared_ptr<const CompiledGrammar>& g, const std::string& s) {
  GrammarMatcher m(g);
  return m.accept_bytes(s) && m.can_terminate();
}

// After `prefix`, the matcher's token mask allows exactly the tokens it accepts, tried one by
// one over the whole vocabulary, and at least one.
inline void expect_mask_is_brute_force(const std::shared_ptr<const CompiledGrammar>& g,
                                       const TokenizerInfo& info, const std::string& prefix) {
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_bytes(prefix)) << prefix;
  std::vector<uint32_t> mask(m.bitmask_words(), 0);
  m.fill_next_token_bitmask(mask.data());
  int32_t allowed = 0;
  for (int32_t id = 0; id < info.num_tokens(); ++id) {
    const bool ok = m.accept_token(id);
    if (ok) m.rollback(1);
    const bool bit = (mask[static_cast<size_t>(id >> 5)] >> (id & 31)) & 1;
    ASSERT_EQ(bit, ok) << prefix << " token " << id << " '" << info.token_bytes(id) << "'";
    allowed += ok;
  }
  EXPECT_GT(allowed, 0) << prefix;
}

// The bytes the matcher accepts next.
inline std::vector<uint8_t> allowed_bytes(GrammarMatcher& m) {
  std::vector<uint8_t> out;
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    if (m.accept_bytes(std::string_view(&c, 1))) {
      out.push_back(static_cast<uint8_t>(b));
      m.rollback(1);
    }
  }
  return out;
}

// A random string of the language: random allowed bytes, stopping (where allowed) with
// probability `stop_p` per step and always after `max_len` bytes once it can. Returns false if
// no end was reached within `max_len * 16` bytes.
inline bool random_walk(const std::shared_ptr<const CompiledGrammar>& g, std::mt19937& rng,
                        std::string& out, size_t max_len = 64, double stop_p = 0.15) {
  GrammarMatcher m(g);
  out.clear();
  std::uniform_real_distribution<double> coin(0, 1);
  // Past max_len the walk steers towards an end: closing bytes first, then punctuation (which
  // moves through structure: "@", ".", ","), then anything but an opener. A byte after which
  // the allowed set did not change is looping (a closer inside a string) and is avoided.
  auto tier = [](uint8_t b) {
    if (b == '"' || b == '}' || b == ']' || b == ')') return 0;
    if (b == '{' || b == '[' || b == '(') return 3;
    if (b < 0x80 && !std::isalnum(b) && !std::isspace(b)) return 1;
    return 2;
  };
  std::vector<uint8_t> looping;
  std::vector<uint8_t> prev_next;
  int last_pick = -1;
  while (out.size() < max_len * 16) {
    if (m.can_terminate() && (out.size() >= max_len || coin(rng) < stop_p)) return true;
    const std::vector<uint8_t> next = allowed_bytes(m);
    if (next.empty()) return m.can_terminate();
    if (last_pick >= 0 && next == prev_next) {
      looping.push_back(static_cast<uint8_t>(last_pick));
    } else {
      looping.clear();  // the context changed: what looped there may close here
    }
    std::vector<uint8_t> pick = next;
    // (One step in four ignores the tiers, so a structure whose punctuation loops still ends.)
    if (out.size() >= max_len && coin(rng) < 0.75) {
      std::vector<uint8_t> fresh;
      for (uint8_t b : next) {
        if (std::find(looping.begin(), looping.end(), b) == looping.end()) fresh.push_back(b);
      }
      if (fresh.empty()) fresh = next;
      int best = 3;
      for (uint8_t b : fresh) best = std::min(best, tier(b));
      pick.clear();
      for (uint8_t b : fresh) {
        if (tier(b) == best) pick.push_back(b);
      }
    }
    const uint8_t b = pick[std::uniform_int_distribution<size_t>(0, pick.size() - 1)(rng)];
    const char c = static_cast<char>(b);
    if (!m.accept_bytes(std::string_view(&c, 1))) return false;
    out += c;
    prev_next = next;
    last_pick = out.size() > max_len ? b : -1;
  }
  return m.can_terminate();
}

}  // namespace sgl::grammar::test
