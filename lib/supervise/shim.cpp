#include "supervise/shim.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

// Everything here runs in a process forked from a possibly multi-threaded
// gangrun: async-signal-safe calls only, fixed buffers on the stack.
namespace gangrun::supervise {
namespace {

// Children listed per round; a larger tree is simply taken in more rounds.
constexpr int k_max_listed = 1024;
// Rounds of "kill every child, reap it" before giving up; each round reaches
// at least one more level of a tree whose members keep re-parenting to us.
constexpr int k_max_kill_rounds = 256;

void write_record(int report_fd, ShimRecord::Kind kind, std::int32_t value, std::int64_t rss) {
  ShimRecord record;
  record.kind = kind;
  record.value = value;
  record.peak_rss_kib = rss;
  // gangrun may be gone (EPIPE with SIGPIPE ignored): nothing to do then.
  while (::write(report_fd, &record, sizeof record) < 0 && errno == EINTR) {
  }
}

// "/proc/self/task/<pid>/children" without snprintf. The shim is
// single-threaded, so its one task has its pid as id.
void children_path(char (&path)[64]) {
  char digits[16];
  int count = 0;
  for (long pid = ::getpid(); pid > 0 && count < 16; pid /= 10) {
    digits[count++] = static_cast<char>('0' + pid % 10);
  }
  const char head[] = "/proc/self/task/";
  const char tail[] = "/children";
  int at = 0;
  for (const char* c = head; *c != '\0'; ++c) path[at++] = *c;
  while (count > 0) path[at++] = digits[--count];
  for (const char* c = tail; *c != '\0'; ++c) path[at++] = *c;
  path[at] = '\0';
}

// Our current children (unreaped, so their pids cannot be reused); returns
// how many were stored in pids.
int list_children(pid_t (&pids)[k_max_listed]) {
  char path[64];
  children_path(path);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buffer[8192];
  int count = 0;
  long current = -1;
  for (;;) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    for (ssize_t i = 0; i < got; ++i) {
      char c = buffer[i];
      if (c >= '0' && c <= '9') {
        current = (current < 0 ? 0 : current * 10) + (c - '0');
      } else if (current >= 0) {
        if (count < k_max_listed) pids[count++] = static_cast<pid_t>(current);
        current = -1;
      }
    }
  }
  if (current >= 0 && count < k_max_listed) pids[count++] = static_cast<pid_t>(current);
  ::close(fd);
  return count;
}

struct Shim {
  pid_t worker = -1;
  int control_fd = -1;
  int report_fd = -1;
  int sigchld_fd = -1;
  bool worker_reaped = false;

  void deliver(int signal_number) {
    // Before the worker is reaped its pid, and so its process group, is
    // still ours.
    if (!worker_reaped) ::killpg(worker, signal_number);
    if (signal_number == SIGKILL) kill_children();
  }

  // SIGKILLs every child (and the group it leads); they are reaped by the
  // loop like any other exit.
  static void kill_children() {
    pid_t pids[k_max_listed];
    int count = list_children(pids);
    for (int i = 0; i < count; ++i) {
      // A child leading its own group (it called setsid) may have members
      // that would otherwise re-parent to us one level at a time.
      if (::getpgid(pids[i]) == pids[i]) ::killpg(pids[i], SIGKILL);
      ::kill(pids[i], SIGKILL);
    }
  }

  void reap_exited() {
    for (;;) {
      int status = 0;
      rusage usage{};
      pid_t pid = ::wait4(-1, &status, WNOHANG, &usage);
      if (pid < 0 && errno == EINTR) continue;
      if (pid <= 0) return;
      if (pid == worker && !worker_reaped) {
        worker_reaped = true;
        write_record(report_fd, ShimRecord::exited, status, usage.ru_maxrss);
      }
    }
  }

  [[noreturn]] void end_everything() {
    if (!worker_reaped) ::killpg(worker, SIGKILL);
    for (int round = 0; round < k_max_kill_rounds; ++round) {
      pid_t pids[k_max_listed];
      int count = list_children(pids);
      if (count == 0) break;
      kill_children();
      // SIGKILL cannot be caught, so these waits are short; reaping lets the
      // killed processes' own orphans re-parent to us for the next round.
      for (int i = 0; i < count; ++i) {
        while (::waitpid(pids[i], nullptr, 0) < 0 && errno == EINTR) {
        }
      }
    }
    ::_exit(0);
  }

  void drain_sigchld() const {
    signalfd_siginfo info[8];
    while (::read(sigchld_fd, info, sizeof info) > 0) {
    }
  }

  [[noreturn]] void run() {
    for (;;) {
      pollfd watched[2] = {{control_fd, POLLIN, 0}, {sigchld_fd, POLLIN, 0}};
      if (::poll(watched, 2, -1) < 0) {
        if (errno == EINTR) continue;
        end_everything();
      }
      if (watched[1].revents != 0) {
        drain_sigchld();
        reap_exited();
      }
      if (watched[0].revents == 0) continue;
      unsigned char requests[64];
      ssize_t got = ::read(control_fd, requests, sizeof requests);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) end_everything();  // gangrun is done with us, or gone
      for (ssize_t i = 0; i < got; ++i) deliver(requests[i]);
    }
  }
};

}  // namespace

void run_shim(pid_t worker, int control_fd, int report_fd, int sigchld_fd) {
  Shim{worker, control_fd, report_fd, sigchld_fd}.run();
}

}  // namespace gangrun::supervise
