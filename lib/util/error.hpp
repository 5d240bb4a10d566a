// gangrun's one error type. Library code returns Expected<T>; the single
// top-level handler in commands/entry.cpp turns an Error into a message and an
// exit code. Nothing below it calls exit().
#pragma once

#include <tl/expected.hpp>

#include <string>
#include <utility>
#include <vector>

namespace gangrun {

enum class ErrorCode {
  usage,           // bad command line, environment value or config file
  store,           // store, rendezvous or network failure (bind, connect, timeout)
  not_found,       // program or interpreter not found
  not_executable,  // program or interpreter found but cannot be executed
  io,              // a file or pipe operation failed at run time
  internal,        // a system call that should not fail did
};

class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Context frames, innermost first ("while reading --config x.json").
  const std::vector<std::string>& context() const { return context_; }

  // Adds a frame on the way up; returns *this so it chains in return statements.
  Error& add_context(std::string frame) {
    context_.push_back(std::move(frame));
    return *this;
  }

  // "outer: inner: message", the form printed to the user.
  std::string describe() const;

  // The exit code this error ends gangrun with (util/exit_codes.hpp).
  int exit_code() const;

 private:
  ErrorCode code_;
  std::string message_;
  std::vector<std::string> context_;
};

template <typename T>
using Expected = tl::expected<T, Error>;

inline tl::unexpected<Error> fail(ErrorCode code, std::string message) {
  return tl::unexpected<Error>(Error(code, std::move(message)));
}

// A bad command line, environment value or config file (exit code 2). The
// message names what was wrong and how to fix it.
inline tl::unexpected<Error> fail_usage(std::string message) {
  return fail(ErrorCode::usage, std::move(message));
}

// Passes an error up unchanged: the error of `expected` as the caller's own.
template <typename T>
tl::unexpected<Error> pass_up(T&& expected) {
  return tl::unexpected<Error>(std::forward<T>(expected).error());
}

}  // namespace gangrun

// GANGRUN_TRY(expr): evaluates expr (an Expected<T>) once and returns its
// error from the enclosing function, which returns some Expected<U>. The
// place of `if (!x) return tl::unexpected(x.error());`.
#define GANGRUN_TRY(expr)                                          \
  do {                                                             \
    if (auto gangrun_try_result_ = (expr); !gangrun_try_result_) { \
      return ::gangrun::pass_up(std::move(gangrun_try_result_));   \
    }                                                              \
  } while (false)

// GANGRUN_TRY_CONTEXT(expr, frame): the same, adding `frame` (what the
// caller was doing, "reading --config x.json") to the error on its way up.
#define GANGRUN_TRY_CONTEXT(expr, frame)                           \
  do {                                                             \
    if (auto gangrun_try_result_ = (expr); !gangrun_try_result_) { \
      gangrun_try_result_.error().add_context(frame);              \
      return ::gangrun::pass_up(std::move(gangrun_try_result_));   \
    }                                                              \
  } while (false)

// GANGRUN_TRY_ASSIGN(name, expr): declares `auto name = (expr);` and returns
// its error as GANGRUN_TRY does; on success *name is the value. Two
// statements: never the lone body of an unbraced if or loop.
// NOLINTBEGIN(bugprone-macro-parentheses): `name` is declared, so it cannot be parenthesized.
#define GANGRUN_TRY_ASSIGN(name, expr) \
  auto name = (expr);                  \
  if (!(name)) return ::gangrun::pass_up(std::move(name))
// NOLINTEND(bugprone-macro-parentheses)

namespace gangrun {

// errno as text, for messages about failed system calls.
std::string errno_text(int error_number);

}  // namespace gangrun
