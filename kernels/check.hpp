// Precondition checks used inside every module: a failed check throws std::invalid_argument whose
// text names the file, the line, the expression and both operands, so a caller's mistake is
// readable without a debugger. Checks guard API boundaries, not inner loops.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace herd::detail {

[[noreturn]] inline void check_failed(const char* file, int line, const std::string& what) {
  std::ostringstream out;
  out << file << ':' << line << ": check failed: " << what;
  throw std::invalid_argument(out.str());
}

template <class A, class B>
[[noreturn]] void check_op_failed(const char* file, int line, const char* expr, const A& a,
                                  const B& b) {
  std::ostringstream out;
  out << expr << " (" << a << " vs " << b << ')';
  check_failed(file, line, out.str());
}

} // namespace herd::detail

/// HERD_CHECK(cond, message-stream): e.g. HERD_CHECK(n > 0, "empty batch of " << name).
#define HERD_CHECK(cond, msg)                                                                      \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::ostringstream herd_check_msg_;                                                          \
      herd_check_msg_ << #cond << ": "                                                             \
                      << msg; /* NOLINT(bugprone-macro-parentheses): a << chain */                 \
      ::herd::detail::check_failed(__FILE__, __LINE__, herd_check_msg_.str());                     \
    }                                                                                              \
  } while (false)

#define HERD_CHECK_OP_(a, b, op)                                                                   \
  do {                                                                                             \
    const auto& herd_a_ = (a);                                                                     \
    const auto& herd_b_ = (b);                                                                     \
    if (!(herd_a_ op herd_b_))                                                                     \
      ::herd::detail::check_op_failed(__FILE__, __LINE__, #a " " #op " " #b, herd_a_, herd_b_);    \
  } while (false)

#define HERD_CHECK_EQ(a, b) HERD_CHECK_OP_(a, b, ==)
#define HERD_CHECK_NE(a, b) HERD_CHECK_OP_(a, b, !=)
#define HERD_CHECK_LT(a, b) HERD_CHECK_OP_(a, b, <)
#define HERD_CHECK_LE(a, b) HERD_CHECK_OP_(a, b, <=)
#define HERD_CHECK_GT(a, b) HERD_CHECK_OP_(a, b, >)
#define HERD_CHECK_GE(a, b) HERD_CHECK_OP_(a, b, >=)
