// gangrun's one error type. Library code returns Expected<T>; the single
// top-level handler in launch/entry.cpp turns an Error into a message and an
// exit code. Nothing below it calls exit().
#pragma once

#include <tl/expected.hpp>

#include <string>
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

// errno as text, for messages about failed system calls.
std::string errno_text(int error_number);

}  // namespace gangrun
