// JSON numbers in a range: integers through integer_range, fractions digit by digit.
#include "grammar/decimal_range.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/number_range.h"

namespace sgl::grammar {
namespace {

ExprId digit_class(Grammar& g, char lo, char hi) {
  return g.char_class({{static_cast<uint32_t>(lo), static_cast<uint32_t>(hi)}});
}

// A bound on a fraction 0.s: its digits still to compare (no trailing zeros; "" is 0) and
// whether a fraction equal to it passes.
struct FractionBound {
  std::string_view digits;
  bool inclusive = true;

  FractionBound rest() const { return {digits.empty() ? digits : digits.substr(1), inclusive}; }
};

// Digit strings s (non-empty unless allow_empty) with lo <= 0.s <= hi (< where not inclusive;
// nullopt: no bound); nullopt when there are none. Each level reads one digit: one strictly
// between the bounds' digits frees the rest, one equal to a bound's digit holds the rest to that
// bound's remaining digits. Every level consumes a digit of a bound or ends, so the expression
// is linear in the bounds' digits.
std::optional<ExprId> fraction_digits(Grammar& g, std::optional<FractionBound> lo,
                                      std::optional<FractionBound> hi, bool allow_empty) {
  const ExprId any_digit = digit_class(g, '0', '9');
  if (lo && lo->digits.empty() && lo->inclusive) lo.reset();  // s >= 0 always holds
  if (hi && hi->digits.empty()) {
    // s <= 0 leaves zeros alone, which a remaining lower bound (> 0) refuses; s < 0 nothing.
    if (!hi->inclusive || lo) return std::nullopt;
    return g.repeat(g.bytes("0"), allow_empty ? 0 : 1, kUnbounded);
  }
  if (!hi && !lo) return g.repeat(any_digit, allow_empty ? 0 : 1, kUnbounded);
  if (!hi && lo->digits.empty()) {  // s > 0: a nonzero digit somewhere
    return g.sequence({g.star(any_digit), digit_class(g, '1', '9'), g.star(any_digit)});
  }
  std::vector<ExprId> alts;
  // An empty rest has the prefix's value: equal to an active lo, below hi (its digits are > 0).
  if (allow_empty && !lo) alts.push_back(g.empty());
  const char a = lo && !lo->digits.empty() ? lo->digits[0] : '0';
  const char b = hi ? hi->digits[0] : '9';
  const char free_lo = lo ? static_cast<char>(a + 1) : '0';
  const char free_hi = hi ? static_cast<char>(b - 1) : '9';
  if (free_lo <= free_hi) {
    alts.push_back(g.sequence({digit_class(g, free_lo, free_hi), g.star(any_digit)}));
  }
  if (lo && (!hi || a <= b)) {
    std::optional<FractionBound> hi_rest;
    if (hi && a == b) hi_rest = hi->rest();
    if (auto r = fraction_digits(g, lo->rest(), hi_rest, true)) {
      alts.push_back(g.sequence({g.bytes(std::string(1, a)), *r}));
    }
  }
  if (hi && (!lo || b > a)) {
    if (auto r = fraction_digits(g, std::nullopt, hi->rest(), true)) {
      alts.push_back(g.sequence({g.bytes(std::string(1, b)), *r}));
    }
  }
  if (alts.empty()) return std::nullopt;
  return g.choice(std::move(alts));
}

// |v| as its shortest round-trip decimal, split at the point.
struct Magnitude {
  uint64_t whole = 0;
  std::string fraction;  // no trailing zeros
  bool inclusive = true;
};

Magnitude magnitude_of(double v, bool inclusive) {
  // Fixed notation of a double up to 2^53: 16 whole digits, or "0." and up to ~330 digits.
  char buf[512];
  const auto [end, ec] =
      std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::fixed);
  const std::string_view text(buf, ec == std::errc() ? static_cast<size_t>(end - buf) : 0);
  const size_t point = text.find('.');
  const std::string_view whole = text.substr(0, point);
  Magnitude m;
  m.inclusive = inclusive;
  std::from_chars(whole.data(), whole.data() + whole.size(), m.whole);
  if (point != std::string_view::npos) {
    m.fraction = std::string(text.substr(point + 1));
    while (!m.fraction.empty() && m.fraction.back() == '0') m.fraction.pop_back();
  }
  return m;
}

// "I.f" (f non-empty) with a <= I.f <= b (< where not inclusive; b nullopt: no bound).
std::optional<ExprId> fraction_forms(Grammar& g, const Magnitude& a,
                                     const std::optional<Magnitude>& b) {
  auto with_whole = [&](uint64_t whole, ExprId fraction) {
    return g.sequence({g.bytes(std::to_string(whole) + "."), fraction});
  };
  const FractionBound lo{a.fraction, a.inclusive};
  std::vector<ExprId> alts;
  if (b && b->whole == a.whole) {
    if (auto f = fraction_digits(g, lo, FractionBound{b->fraction, b->inclusive}, false)) {
      alts.push_back(with_whole(a.whole, *f));
    }
  } else if (!b || b->whole > a.whole) {
    if (auto f = fraction_digits(g, lo, std::nullopt, false)) {
      alts.push_back(with_whole(a.whole, *f));
    }
    // Whole parts strictly between the bounds': any fraction.
    const int64_t mid_lo = static_cast<int64_t>(a.whole) + 1;
    std::optional<int64_t> mid_hi;
    if (b) mid_hi = static_cast<int64_t>(b->whole) - 1;
    if (!mid_hi || mid_lo <= *mid_hi) {
      alts.push_back(g.sequence(
          {integer_range(g, mid_lo, mid_hi), g.bytes("."), g.plus(digit_class(g, '0', '9'))}));
    }
    if (b) {
      if (auto f =
              fraction_digits(g, std::nullopt, FractionBound{b->fraction, b->inclusive}, false)) {
        alts.push_back(with_whole(b->whole, *f));
      }
    }
  }
  if (alts.empty()) return std::nullopt;
  return g.choice(std::move(alts));
}

}  // namespace

std::optional<ExprId> decimal_range(Grammar& g, std::optional<DecimalBound> lo,
                                    std::optional<DecimalBound> hi, bool integer_only) {
  std::vector<ExprId> alts;
  std::optional<int64_t> ilo, ihi;
  // The +-1 in integers: in doubles it would round away at 2^53.
  if (lo) {
    ilo = lo->exclusive ? static_cast<int64_t>(std::floor(lo->value)) + 1
                        : static_cast<int64_t>(std::ceil(lo->value));
  }
  if (hi) {
    ihi = hi->exclusive ? static_cast<int64_t>(std::ceil(hi->value)) - 1
                        : static_cast<int64_t>(std::floor(hi->value));
  }
  if (!ilo || !ihi || *ilo <= *ihi) alts.push_back(integer_range(g, ilo, ihi));
  if (!integer_only) {
    // Written without a sign: magnitudes from max(lo, 0) to hi.
    if (!hi || hi->value >= 0) {
      const Magnitude a =
          lo && lo->value >= 0 ? magnitude_of(lo->value, !lo->exclusive) : Magnitude{};
      std::optional<Magnitude> b;
      if (hi) b = magnitude_of(hi->value, !hi->exclusive);
      if (auto f = fraction_forms(g, a, b)) alts.push_back(*f);
    }
    // With "-": magnitudes from max(-hi, 0) to -lo.
    if (!lo || lo->value <= 0) {
      const Magnitude a =
          hi && hi->value <= 0 ? magnitude_of(hi->value, !hi->exclusive) : Magnitude{};
      std::optional<Magnitude> b;
      if (lo) b = magnitude_of(lo->value, !lo->exclusive);
      if (auto f = fraction_forms(g, a, b)) alts.push_back(g.sequence({g.bytes("-"), *f}));
    }
  }
  if (alts.empty()) return std::nullopt;
  return g.choice(std::move(alts));
}

}  // namespace sgl::grammar
