#include "supervise/process.hpp"

#define BOOST_PROCESS_V2_HEADER_ONLY 1
#define BOOST_PROCESS_USE_STD_FS 1

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

// clang-format off
// Boost 1.81's Process v2 headers use these two without including them.
#include <boost/optional.hpp>
#include <boost/type_traits/decay.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/process/v2/posix/default_launcher.hpp>
#include <boost/process/v2/process.hpp>
// clang-format on

namespace gangrun::supervise {
namespace bp = boost::process::v2;

namespace {

// Runs in the child between fork and exec: async-signal-safe calls only.
struct WorkerChildSetup {
  const SpawnSpec& spec;
  pid_t parent_pid;

  template <typename Launcher>
  bp::error_code on_exec_setup(Launcher&, const std::filesystem::path&, const char* const*&) {
    if (::setsid() < 0) return last_error();
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) return last_error();
    // gangrun may have died between fork() and prctl(); then nobody would
    // ever send the death signal, so die now.
    if (::getppid() != parent_pid) ::_exit(1);

    // gangrun ignores SIGPIPE and catches others through Asio; exec keeps
    // ignored dispositions and the mask, so give the worker a clean slate.
    for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
      if (signal_number == SIGKILL || signal_number == SIGSTOP) continue;
      ::signal(signal_number, SIG_DFL);
    }
    sigset_t empty;
    sigemptyset(&empty);
    ::sigprocmask(SIG_SETMASK, &empty, nullptr);

    const int targets[3] = {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO};
    const int sources[3] = {spec.stdin_fd, spec.stdout_fd, spec.stderr_fd};
    for (int i = 0; i < 3; ++i) {
      if (sources[i] >= 0 && ::dup2(sources[i], targets[i]) < 0) return last_error();
    }
    return {};
  }

  static bp::error_code last_error() { return {errno, boost::system::system_category()}; }
};

ErrorCode classify_exec_error(int error_number) {
  switch (error_number) {
    case ENOENT:
    case ENOTDIR:
      return ErrorCode::not_found;
    case EACCES:
    case ENOEXEC:
    case EPERM:
    case EISDIR:
      return ErrorCode::not_executable;
    default:
      return ErrorCode::internal;
  }
}

}  // namespace

Expected<Child> spawn(const SpawnSpec& spec) {
  // Boost.Process notifies the executor's context around fork(); a private
  // context keeps that from touching (and, in the child, re-creating) the
  // reactor of gangrun's event loop.
  static boost::asio::io_context spawn_context;

  std::vector<std::string> env_strings = to_envp_strings(spec.env);
  std::vector<const char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (const std::string& entry : env_strings) envp.push_back(entry.c_str());
  envp.push_back(nullptr);

  std::vector<std::string> args(spec.argv.begin() + (spec.argv.empty() ? 0 : 1), spec.argv.end());

  bp::posix::default_launcher launcher;
  launcher.env = envp.data();
  bp::error_code error;
  auto process = launcher(spawn_context, error, std::filesystem::path(spec.executable), args,
                          WorkerChildSetup{spec, ::getpid()});
  if (error) {
    return fail(classify_exec_error(error.value()),
                "cannot execute " + spec.executable + ": " + error.message());
  }
  pid_t pid = process.id();
  // From here on gangrun owns the child: detach so Boost neither waits for
  // nor terminates it, and watch it through a pidfd of our own.
  process.detach();
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    int saved = errno;
    ::kill(pid, SIGKILL);
    return fail(ErrorCode::internal,
                "pidfd_open(" + std::to_string(pid) + ") failed: " + errno_text(saved));
  }
  return Child{pid, UniqueFd(pidfd)};
}

Expected<void> become_subreaper() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
    return fail(ErrorCode::internal, "prctl(PR_SET_CHILD_SUBREAPER) failed: " + errno_text(errno));
  }
  return {};
}

}  // namespace gangrun::supervise
