// Helpers for the grammar tests: compiling, full matches, random walks through a matcher.
#pragma once

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
// no end was reached within `max_len * 4` bytes.
inline bool random_walk(const std::shared_ptr<const CompiledGrammar>& g, std::mt19937& rng,
                        std::string& out, size_t max_len = 64, double stop_p = 0.15) {
  GrammarMatcher m(g);
  out.clear();
  std::uniform_real_distribution<double> coin(0, 1);
  while (out.size() < max_len * 4) {
    if (m.can_terminate() && (out.size() >= max_len || coin(rng) < stop_p)) return true;
    const std::vector<uint8_t> next = allowed_bytes(m);
    if (next.empty()) return m.can_terminate();
    // Past max_len, steer towards an end: closing bytes first, then punctuation (which moves
    // through structure: "@", ".", ","), then anything but an opener, then anything.
    std::vector<uint8_t> pick = next;
    if (out.size() >= max_len) {
      auto tier = [](uint8_t b) {
        if (b == '"' || b == '}' || b == ']' || b == ')') return 0;
        if (b == '{' || b == '[' || b == '(') return 3;
        if (b < 0x80 && !std::isalnum(b) && !std::isspace(b)) return 1;
        return 2;
      };
      int best = 3;
      for (uint8_t b : next) best = std::min(best, tier(b));
      pick.clear();
      for (uint8_t b : next) {
        if (tier(b) == best) pick.push_back(b);
      }
    }
    const uint8_t b = pick[std::uniform_int_distribution<size_t>(0, pick.size() - 1)(rng)];
    const char c = static_cast<char>(b);
    if (!m.accept_bytes(std::string_view(&c, 1))) return false;
    out += c;
  }
  return m.can_terminate();
}

}  // namespace sgl::grammar::test
