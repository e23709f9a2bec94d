// SGL_CHECK family: abort with file:line and a message on violated invariants (bugs).
#pragma once

#include <sstream>
#include <string>

namespace sgl::detail {

// Collects the streamed message; aborts in the destructor.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

// Lets `cond ? (void)0 : Voidify() & stream << x` type-check as void.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace sgl::detail

#define SGL_CHECK(cond) \
  (cond)                \
      ? (void)0         \
      : ::sgl::detail::Voidify() & ::sgl::detail::CheckFailure(__FILE__, __LINE__, #cond).stream()

#define SGL_CHECK_OP_(a, b, op)                                                                \
  ((a)op(b)) ? (void)0                                                                         \
             : ::sgl::detail::Voidify() &                                                      \
                   ::sgl::detail::CheckFailure(__FILE__, __LINE__, #a " " #op " " #b).stream() \
                       << "(" << (a) << " vs " << (b) << ") "

#define SGL_CHECK_EQ(a, b) SGL_CHECK_OP_(a, b, ==)
#define SGL_CHECK_NE(a, b) SGL_CHECK_OP_(a, b, !=)
#define SGL_CHECK_LT(a, b) SGL_CHECK_OP_(a, b, <)
#define SGL_CHECK_LE(a, b) SGL_CHECK_OP_(a, b, <=)
#define SGL_CHECK_GT(a, b) SGL_CHECK_OP_(a, b, >)
#define SGL_CHECK_GE(a, b) SGL_CHECK_OP_(a, b, >=)
