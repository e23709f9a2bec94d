// Decimal integer ranges as grammar expressions.
#include "grammar/number_range.h"

#include <string>
#include <vector>

namespace sgl::grammar {
namespace {

ExprId digit_class(Grammar& g, char lo, char hi) {
  return g.char_class({{static_cast<uint32_t>(lo), static_cast<uint32_t>(hi)}});
}

// Decimal strings of the same length between x and y (x <= y), leading zeros included.
ExprId same_length(Grammar& g, const std::string& x, const std::string& y) {
  if (x.empty()) return g.empty();
  if (x[0] == y[0]) {
    return g.sequence({g.bytes(x.substr(0, 1)), same_length(g, x.substr(1), y.substr(1))});
  }
  const std::string nines(x.size() - 1, '9'), zeros(x.size() - 1, '0');
  std::vector<ExprId> alts;
  // x[0] followed by anything >= x's rest; whole digits in between; y[0] followed by <= y's rest.
  // When x's rest is all zeros (y's all nines) its branch merges into the middle one.
  char mid_lo = static_cast<char>(x[0] + 1), mid_hi = static_cast<char>(y[0] - 1);
  if (x.substr(1) == zeros) {
    mid_lo = x[0];
  } else {
    alts.push_back(g.sequence({g.bytes(x.substr(0, 1)), same_length(g, x.substr(1), nines)}));
  }
  const bool y_full = y.substr(1) == nines;
  if (y_full) mid_hi = y[0];
  if (mid_lo <= mid_hi) {
    alts.push_back(
        g.sequence({digit_class(g, mid_lo, mid_hi),
                    g.repeat(digit_class(g, '0', '9'), static_cast<int32_t>(x.size() - 1),
                             static_cast<int32_t>(x.size() - 1))}));
  }
  if (!y_full) {
    alts.push_back(g.sequence({g.bytes(y.substr(0, 1)), same_length(g, zeros, y.substr(1))}));
  }
  return g.choice(std::move(alts));
}

std::string pow10_minus_1(size_t digits) { return std::string(digits, '9'); }

// Naturals in [a, b] without leading zeros; b nullopt: unbounded.
ExprId natural_range(Grammar& g, uint64_t a, std::optional<uint64_t> b) {
  const std::string as = std::to_string(a);
  std::vector<ExprId> alts;
  const size_t max_len = b ? std::to_string(*b).size() : as.size();
  for (size_t len = as.size(); len <= max_len; ++len) {
    // The smallest len-digit natural (built by appending: GCC 12 warns, -Wrestrict, on
    // `"1" + std::string(...)` at -O3).
    std::string lo = len == as.size() ? as : (len == 1 ? "0" : "1");
    if (len != as.size() && len > 1) lo.append(len - 1, '0');
    const std::string hi = (b && len == max_len) ? std::to_string(*b) : pow10_minus_1(len);
    alts.push_back(same_length(g, lo, hi));
  }
  if (!b) {
    // Every number with more digits than a.
    alts.push_back(g.sequence(
        {digit_class(g, '1', '9'),
         g.repeat(digit_class(g, '0', '9'), static_cast<int32_t>(as.size()), kUnbounded)}));
  }
  return g.choice(std::move(alts));
}

}  // namespace

ExprId integer_range(Grammar& g, std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<ExprId> alts;
  // Negative part: -m with m in [max(1, -hi), -lo].
  if (!lo || *lo < 0) {
    const uint64_t m_lo = (hi && *hi < 0) ? static_cast<uint64_t>(-(*hi + 1)) + 1 : 1;
    std::optional<uint64_t> m_hi;
    if (lo) m_hi = static_cast<uint64_t>(-(*lo + 1)) + 1;
    alts.push_back(g.sequence({g.bytes("-"), natural_range(g, m_lo, m_hi)}));
  }
  // Non-negative part: [max(0, lo), hi].
  if (!hi || *hi >= 0) {
    const uint64_t n_lo = (lo && *lo > 0) ? static_cast<uint64_t>(*lo) : 0;
    std::optional<uint64_t> n_hi;
    if (hi) n_hi = static_cast<uint64_t>(*hi);
    alts.push_back(natural_range(g, n_lo, n_hi));
  }
  return g.choice(std::move(alts));
}

}  // namespace sgl::grammar
