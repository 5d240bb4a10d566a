#include "supervise/exit_status.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

using gangrun::supervise::ExitStatus;

namespace {

// A real wait status from a real child, so the decoding is checked against
// what the kernel produces rather than against our own encoding.
int wait_status_of_child(void (*body)()) {
  pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(99);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace

TEST_CASE("supervise::ExitStatus decodes a normal exit", "[supervise]") {
  int status = wait_status_of_child([] { ::_exit(7); });
  ExitStatus decoded = ExitStatus::from_wait_status(status);
  CHECK(decoded.kind == ExitStatus::Kind::exited);
  CHECK(decoded.code == 7);
  CHECK(decoded.shell_code() == 7);
  CHECK_FALSE(decoded.success());
  CHECK(decoded.describe() == "exit code 7");
}

TEST_CASE("supervise::ExitStatus decodes exit 0 as success", "[supervise]") {
  ExitStatus decoded = ExitStatus::from_wait_status(wait_status_of_child([] { ::_exit(0); }));
  CHECK(decoded.success());
  CHECK(decoded.shell_code() == 0);
}

TEST_CASE("supervise::ExitStatus decodes death by signal as 128+S", "[supervise]") {
  int status = wait_status_of_child([] {
    std::signal(SIGTERM, SIG_DFL);
    ::raise(SIGTERM);
  });
  ExitStatus decoded = ExitStatus::from_wait_status(status);
  CHECK(decoded.kind == ExitStatus::Kind::signaled);
  CHECK(decoded.signal == SIGTERM);
  CHECK(decoded.shell_code() == 128 + SIGTERM);
  CHECK(decoded.describe() == "signal 15 (SIGTERM)");
}
