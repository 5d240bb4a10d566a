#include "supervise/exit_status.hpp"

#include "util/exit_codes.hpp"
#include "util/signals.hpp"

#include <sys/wait.h>

namespace gangrun::supervise {

ExitStatus ExitStatus::from_wait_status(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    ExitStatus status = killed_by(WTERMSIG(wait_status));
    status.core_dumped = WCOREDUMP(wait_status);
    return status;
  }
  return exited_with(WEXITSTATUS(wait_status));
}

int ExitStatus::shell_code() const {
  return kind == Kind::signaled ? exit_codes::for_signal(signal) : code;
}

std::string ExitStatus::describe() const {
  if (kind == Kind::exited) return "exit code " + std::to_string(code);
  std::string text = "signal " + std::to_string(signal) + " (" + signals::name(signal) + ")";
  if (core_dumped) text += ", core dumped";
  return text;
}

}  // namespace gangrun::supervise
