#include "accel/probe_child.hpp"

#include "accel/report_json.hpp"
#include "util/pipe.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;  // NOLINT: POSIX global

namespace gangrun::accel {
namespace {

using Clock = std::chrono::steady_clock;

// ---- the child ---------------------------------------------------------------

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<std::size_t>(wrote);
  }
  return true;
}

// The forked child: becomes a process whose environment is exactly env, so
// that the runtime's init sees env's visibility and ordering variables, probes,
// writes the report and leaves with _exit (no atexit handlers, no stdio
// flush of buffers copied from the parent).
[[noreturn]] void run_probe_child(Probe probe, int report_fd, pid_t parent, char** envp,
                                  const EnvMap& env) {
  // A probe must not outlive a launcher killed while it waits.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);
  // Hold no other descriptor of the launcher's (another child's pipe, a
  // listening socket) for as long as the driver takes.
  constexpr int k_report_fd = 3;
  if (report_fd != k_report_fd && ::dup2(report_fd, k_report_fd) < 0) ::_exit(1);
  ::close_range(static_cast<unsigned>(k_report_fd) + 1, ~0U, 0);
  environ = envp;
  int status = 0;
  try {
    if (!write_all(k_report_fd, report_to_json(probe(env)))) status = 1;
  } catch (...) {
    status = 2;
  }
  ::_exit(status);
}

// ---- the parent --------------------------------------------------------------

enum class ReadEnd { eof, timed_out, failed };

ReadEnd read_until_eof(int fd, Clock::time_point deadline, std::string& text) {
  char buffer[4096];
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return ReadEnd::timed_out;
    pollfd entry{fd, POLLIN, 0};
    int ready = ::poll(&entry, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return ReadEnd::failed;
    if (ready <= 0) continue;
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return ReadEnd::failed;
    }
    if (got == 0) return ReadEnd::eof;
    text.append(buffer, static_cast<std::size_t>(got));
  }
}

// The child's wait status, or nullopt if it is still running at deadline.
std::optional<int> wait_until(pid_t pid, Clock::time_point deadline) {
  for (;;) {
    int status = 0;
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) return std::nullopt;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

std::string duration_text(std::chrono::milliseconds timeout) {
  if (timeout.count() % 1000 == 0) return std::to_string(timeout.count() / 1000) + " s";
  return std::to_string(timeout.count()) + " ms";
}

}  // namespace

BackendReport probe_in_child(Probe probe, DeviceKind kind, std::string_view what,
                             const EnvMap& env_for_child, std::chrono::milliseconds timeout) {
  std::string name(what);
  auto unavailable_report = [&](std::string why) {
    BackendReport report;
    report.kind = kind;
    report.unavailable = std::move(why);
    return report;
  };
  Expected<Pipe> pipe = make_pipe();
  if (!pipe) {
    return unavailable_report("the " + name + " probe could not start: " + pipe.error().message());
  }
  // Built before fork so the child only has to install it.
  std::vector<std::string> env_strings = to_envp_strings(env_for_child);
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (std::string& entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);

  Clock::time_point deadline = Clock::now() + timeout;
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    return unavailable_report("the " + name +
                              " probe could not start: fork failed: " + errno_text(errno));
  }
  if (pid == 0) run_probe_child(probe, pipe->write_end.get(), parent, envp.data(), env_for_child);
  pipe->write_end.reset();

  std::string text;
  ReadEnd end = read_until_eof(pipe->read_end.get(), deadline, text);
  int read_errno = errno;
  std::optional<int> status;
  if (end == ReadEnd::eof) status = wait_until(pid, deadline);
  if (!status) {
    kill_and_reap(pid);
    if (end == ReadEnd::failed) {
      return unavailable_report("reading the " + name +
                                " probe's report failed: " + errno_text(read_errno));
    }
    return unavailable_report("the " + name + " probe did not answer within " +
                              duration_text(timeout));
  }
  if (WIFSIGNALED(*status)) {
    int signal_number = WTERMSIG(*status);
    return unavailable_report("the " + name + " probe died of signal " +
                              std::to_string(signal_number) + " (" + ::strsignal(signal_number) +
                              ")");
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return unavailable_report("the " + name + " probe exited with status " +
                              std::to_string(WEXITSTATUS(*status)) + " without a report");
  }
  Expected<BackendReport> report = report_from_json(text);
  if (!report)
    return unavailable_report("the " + name + " probe's report: " + report.error().message());
  return std::move(*report);
}

}  // namespace gangrun::accel
