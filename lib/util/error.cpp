#include "util/error.hpp"

#include "util/exit_codes.hpp"

#include <cstring>

namespace gangrun {

std::string Error::describe() const {
  std::string text;
  // Not std::views::reverse: clang (the fuzz targets' compiler) cannot build
  // libstdc++ 12's <ranges>.
  // NOLINTNEXTLINE(modernize-loop-convert)
  for (auto frame = context_.rbegin(); frame != context_.rend(); ++frame) {
    text += *frame;
    text += ": ";
  }
  return text + message_;
}

int Error::exit_code() const {
  switch (code_) {
    case ErrorCode::usage:
      return exit_codes::k_usage;
    case ErrorCode::store:
      return exit_codes::k_store;
    case ErrorCode::not_found:
      return exit_codes::k_not_found;
    case ErrorCode::not_executable:
      return exit_codes::k_not_executable;
    case ErrorCode::io:
    case ErrorCode::internal:
      break;
  }
  return exit_codes::k_system_failure;
}

std::string errno_text(int error_number) {
  char buffer[256];
  // GNU strerror_r returns the message pointer, which may not be buffer.
  return ::strerror_r(error_number, buffer, sizeof buffer);
}

}  // namespace gangrun
