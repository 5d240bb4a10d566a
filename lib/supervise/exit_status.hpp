// How a process ended, decoded once from its wait status.
#pragma once

#include <string>

namespace gangrun::supervise {

struct ExitStatus {
  enum class Kind { exited, signaled };
  Kind kind = Kind::exited;
  int code = 0;    // exit code when exited
  int signal = 0;  // signal number when signaled
  bool core_dumped = false;

  // Decodes a wait status with WIFEXITED/WEXITSTATUS/WTERMSIG (never by
  // adding 128 to the raw status, which would be wrong with a core dump).
  static ExitStatus from_wait_status(int wait_status);
  static ExitStatus exited_with(int code) { return {Kind::exited, code, 0, false}; }
  static ExitStatus killed_by(int signal) { return {Kind::signaled, 0, signal, false}; }

  bool success() const { return kind == Kind::exited && code == 0; }
  // The code a shell would show: N, or 128+S (util/exit_codes.hpp).
  int shell_code() const;
  // "exit code 3" or "signal 9 (SIGKILL)".
  std::string describe() const;
};

}  // namespace gangrun::supervise
