#include "supervise/process.hpp"

#include "supervise/close_range.hpp"
#include "supervise/shim.hpp"
#include "util/open_file_limit.hpp"
#include "util/pipe.hpp"

#define BOOST_PROCESS_V2_HEADER_ONLY 1
#define BOOST_PROCESS_USE_STD_FS 1
// Boost's own handle of the shim, which gangrun detaches at once, would otherwise be a pidfd,
// and its constructor throws where the kernel has no pidfd_open (before Linux 5.3): with the
// shim started and its pid lost. gangrun opens the shim's pidfd itself (spawn_under_shim).
#define BOOST_PROCESS_V2_DISABLE_PIDFD_OPEN 1

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <exception>
#include <filesystem>
#include <fstream>
#include <utility>

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

// ---- in forked children: async-signal-safe calls only ------------------------

void set_every_disposition(sighandler_t disposition) {
  for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
    if (signal_number == SIGKILL || signal_number == SIGSTOP) continue;
    ::signal(signal_number, disposition);
  }
}

// A descriptor the shim keeps must not sit on 0-2, which become /dev/null.
int above_stdio(int fd) {
  return fd > STDERR_FILENO ? fd : ::fcntl(fd, F_DUPFD, STDERR_FILENO + 1);
}

// Closes every descriptor from 3 up except those in keep (negative entries
// are ignored). keep is sorted in place.
template <std::size_t N>
void close_all_except(int (&keep)[N]) {
  std::sort(keep, keep + N);
  unsigned int from = STDERR_FILENO + 1;
  for (int fd : keep) {
    if (fd < static_cast<int>(from)) continue;
    auto kept = static_cast<unsigned int>(fd);
    if (kept > from) close_descriptors(from, kept - 1);
    from = kept + 1;
  }
  close_descriptors(from, ~0U);
}

void null_stdio() {
  int null_fd = ::open("/dev/null", O_RDWR);
  if (null_fd < 0) return;
  for (int target = 0; target <= STDERR_FILENO; ++target) ::dup2(null_fd, target);
  if (null_fd > STDERR_FILENO) ::close(null_fd);
}

// SpawnSpec::cpus as the bit mask sched_setaffinity takes, made in gangrun:
// the forked shim may not allocate.
struct CpuMask {
  std::vector<unsigned long> words;  // empty: no pinning
  std::size_t bytes() const { return words.size() * sizeof(unsigned long); }
  const cpu_set_t* set() const { return reinterpret_cast<const cpu_set_t*>(words.data()); }
};

CpuMask cpu_mask(const std::vector<int>& cpus) {
  constexpr std::size_t bits = sizeof(unsigned long) * 8;
  CpuMask mask;
  for (int cpu : cpus) {
    if (cpu < 0) continue;
    auto at = static_cast<std::size_t>(cpu);
    if (mask.words.size() <= at / bits) mask.words.resize(at / bits + 1, 0);
    mask.words[at / bits] |= 1UL << (at % bits);
  }
  return mask;
}

// What the worker's starting code needs; it runs on the shim's memory
// (CLONE_VM), so exec_errno is how it tells the shim that execve failed.
struct WorkerStart {
  const SpawnSpec* spec;
  const char* executable;
  const char* const* argv;
  const char* const* envp;
  const CpuMask* cpus;
  pid_t shim_pid;
  pid_t gangrun_pid;
  int exec_errno;
};

// The worker between clone and exec: a new session, the death signal
// against the shim, default dispositions, an empty mask, its stdio, and no
// other descriptor.
int start_worker(void* argument) {
  auto& start = *static_cast<WorkerStart*>(argument);
  if (::setsid() < 0 || ::prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
    start.exec_errno = errno;
    ::_exit(127);
  }
  // The shim may have died before prctl(); then nobody would ever send the
  // death signal, so die now.
  if (::getppid() != start.shim_pid) ::_exit(1);
  // Where Yama's ptrace_scope is 1 only a process's ancestors may read it,
  // and the stack tool the gang doctor runs is gangrun's descendant, not the
  // worker's: naming gangrun as its tracer lets gangrun's own children read
  // its stack, and nobody else. Without Yama this fails, and nothing is needed.
  ::prctl(PR_SET_PTRACER, start.gangrun_pid);
  // The shim ignores signals and blocks SIGCHLD, and exec keeps ignored
  // dispositions and the mask: give the worker a clean slate.
  set_every_disposition(SIG_DFL);
  sigset_t empty;
  sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
  // The user's own open-file limit, once gangrun raised its own.
  if (const rlimit* users = open_file_limit::users_limit()) ::setrlimit(RLIMIT_NOFILE, users);
  if (!start.cpus->words.empty() &&
      ::sched_setaffinity(0, start.cpus->bytes(), start.cpus->set()) < 0) {
    start.exec_errno = errno;
    ::_exit(127);
  }
  const int sources[3] = {start.spec->stdin_fd, start.spec->stdout_fd, start.spec->stderr_fd};
  for (int target = 0; target <= STDERR_FILENO; ++target) {
    if (sources[target] >= 0 && ::dup2(sources[target], target) < 0) {
      start.exec_errno = errno;
      ::_exit(127);
    }
  }
  close_descriptors(STDERR_FILENO + 1, ~0U);
  ::execve(start.executable, const_cast<char* const*>(start.argv),
           const_cast<char* const*>(start.envp));
  start.exec_errno = errno;
  ::_exit(127);
}

// Runs in the child Boost.Process forks, which becomes the shim: it starts
// the worker and never returns (shim.hpp says why it exists). Boost's exec
// of `executable` never happens: the shim closes Boost's status pipe as soon
// as it has kept what it needs, so gangrun goes on to the next worker while
// this one starts, and the shim reports the worker's exec on the report pipe.
struct ShimSetup {
  const SpawnSpec& spec;
  const char* const* envp;
  const CpuMask& cpus;
  pid_t gangrun_pid;
  int control_fd;  // read end
  int report_fd;   // write end
  int exit_fd;     // write end of the exit pipe; -1 where the kernel has pidfd_open

  template <typename Launcher>
  bp::error_code on_exec_setup(Launcher&, const std::filesystem::path& executable,
                               const char* const*& argv) {
    if (::setsid() < 0) return last_error();
    // gangrun died before we could start: nobody will ever read a report.
    if (::getppid() != gangrun_pid) ::_exit(1);
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    set_every_disposition(SIG_IGN);
    ::signal(SIGCHLD, SIG_DFL);  // ignoring it would reap children unseen
    sigset_t only_child;
    sigemptyset(&only_child);
    sigaddset(&only_child, SIGCHLD);
    ::sigprocmask(SIG_SETMASK, &only_child, nullptr);
    int sigchld_fd = ::signalfd(-1, &only_child, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sigchld_fd < 0) return last_error();

    // Keep what the shim and the worker need, close the rest (Boost's
    // status pipe among them, which lets gangrun go on; another shim's
    // control pipe, whose EOF must not be hidden).
    int control = above_stdio(control_fd);
    int report = above_stdio(report_fd);
    int exit_end = exit_fd < 0 ? -1 : above_stdio(exit_fd);
    sigchld_fd = above_stdio(sigchld_fd);
    int keep[7] = {control,       report,         sigchld_fd,    exit_end,
                   spec.stdin_fd, spec.stdout_fd, spec.stderr_fd};
    close_all_except(keep);

    // CLONE_VM | CLONE_VFORK, as posix_spawn does: no copy of the address
    // space, and the shim waits here until the worker has exec'd (or failed
    // to), so the stack below is free again when clone returns.
    WorkerStart start{&spec, executable.c_str(), argv, envp, &cpus, ::getpid(), gangrun_pid, 0};
    alignas(64) char worker_stack[64 * 1024];
    pid_t worker = ::clone(start_worker, worker_stack + sizeof worker_stack,
                           CLONE_VM | CLONE_VFORK | SIGCHLD, &start);
    if (worker < 0 || start.exec_errno != 0) {
      ShimRecord failed{worker < 0 ? ShimRecord::fork_failed : ShimRecord::exec_failed,
                        worker < 0 ? errno : start.exec_errno, 0};
      if (worker > 0) ::waitpid(worker, nullptr, 0);
      (void)!::write(report, &failed, sizeof failed);
      ::_exit(127);
    }
    ShimRecord started{ShimRecord::started, worker, 0};
    (void)!::write(report, &started, sizeof started);
    // Holding gangrun's stdout, or the worker's pipes, would keep their
    // readers waiting after the worker is gone.
    null_stdio();
    int only[4] = {control, report, sigchld_fd, exit_end};
    close_all_except(only);
    run_shim(worker, control, report, sigchld_fd);
  }

  // Only when on_exec_setup failed before the worker existed. Boost's own
  // fallback is exit(), which would run gangrun's atexit handlers in this
  // forked copy. (Variadic: Boost 1.81 probes this hook with one argument
  // more than it passes.)
  template <typename... Args>
  void on_exec_error(Args&&...) {
    ::_exit(127);
  }

  static bp::error_code last_error() { return {errno, boost::system::system_category()}; }
};

// ---- in gangrun ---------------------------------------------------------------

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

// ENOENT for a file that exists means its #! interpreter does not.
std::string explain_exec_error(const std::string& executable, int error_number) {
  std::string text = "cannot execute " + executable + ": " + errno_text(error_number);
  if (error_number != ENOENT) return text;
  std::ifstream file(executable);
  std::string first_line;
  if (!file || !std::getline(file, first_line) || !first_line.starts_with("#!")) return text;
  std::string interpreter = first_line.substr(2);
  interpreter.erase(0, interpreter.find_first_not_of(" \t"));
  interpreter = interpreter.substr(0, interpreter.find_first_of(" \t\r"));
  return text + " (its #! interpreter " + interpreter + " does not exist)";
}

// Out of descriptors, processes or memory: gangrun's failure, not the
// program's (exit_codes::k_system_failure).
tl::unexpected<Error> cannot_start(const SpawnSpec& spec, const std::string& why) {
  return fail(ErrorCode::internal, "cannot start " + spec.executable + ": " + why);
}

// pidfd_open(2) came with Linux 5.3; RHEL 8 and its kin run 4.18. Asked once.
bool kernel_has_pidfd_open() {
  static const bool has = [] {
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
    if (pidfd >= 0) ::close(pidfd);
    return pidfd >= 0 || errno != ENOSYS;
  }();
  return has;
}

void reap(pid_t pid) {
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

Expected<Child> spawn_under_shim(const SpawnSpec& spec) {
  // Boost.Process notifies the executor's context around fork(); a private
  // context keeps that from touching (and, in the child, re-creating) the
  // reactor of gangrun's event loop. One per thread: the child locks the
  // context's mutex, and a context shared between threads may be locked by
  // another thread at the moment of fork(), which leaves the child waiting
  // forever (probes run on several threads at once).
  thread_local boost::asio::io_context spawn_context;

  auto control = make_pipe();
  if (!control) return cannot_start(spec, control.error().message());
  auto report = make_pipe();
  if (!report) return cannot_start(spec, report.error().message());
  // Without pidfds, the shim's exit is the end of file of a pipe only the shim holds.
  const bool use_pidfd = kernel_has_pidfd_open();
  Pipe exit_pipe;
  if (!use_pidfd) {
    auto made = make_pipe();
    if (!made) return cannot_start(spec, made.error().message());
    exit_pipe = std::move(*made);
  }

  std::vector<std::string> env_strings = to_envp_strings(spec.env);
  std::vector<const char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (const std::string& entry : env_strings) envp.push_back(entry.c_str());
  envp.push_back(nullptr);
  std::vector<std::string> args(spec.argv.begin() + (spec.argv.empty() ? 0 : 1), spec.argv.end());
  const CpuMask cpus = cpu_mask(spec.cpus);

  bp::posix::default_launcher launcher;
  launcher.env = envp.data();
  bp::error_code error;
  // The executor overload: Boost 1.81's (context, error_code) overload
  // forwards without the error_code and throws instead.
  auto process =
      launcher(spawn_context.get_executor(), error, std::filesystem::path(spec.executable), args,
               ShimSetup{spec, envp.data(), cpus, ::getpid(), control->read_end.get(),
                         report->write_end.get(), use_pidfd ? -1 : exit_pipe.write_end.get()});
  // Only the shim keeps these ends; from now on the control pipe's EOF
  // means "gangrun is done with you".
  control->read_end.reset();
  report->write_end.reset();
  exit_pipe.write_end.reset();
  if (error) return cannot_start(spec, errno_text(error.value()));
  pid_t shim = process.id();
  // gangrun owns the shim from here: Boost must neither wait for nor
  // terminate it.
  process.detach();

  UniqueFd shim_exit = std::move(exit_pipe.read_end);
  if (use_pidfd) {
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, shim, 0));
    if (pidfd < 0) {
      int saved = errno;
      control->write_end.reset();  // the shim kills the worker and exits
      reap(shim);
      return cannot_start(spec, "pidfd_open failed: " + errno_text(saved));
    }
    shim_exit = UniqueFd(pidfd);
  }
  Child child{shim, std::move(shim_exit), use_pidfd, std::move(control->write_end),
              std::move(report->read_end)};
  for (int fd : {child.control.get(), child.report.get(), use_pidfd ? -1 : child.shim_exit.get()}) {
    if (fd < 0) continue;
    if (auto made = set_non_blocking(fd); !made) return cannot_start(spec, made.error().message());
  }
  return child;
}

// ---- run_to_completion: one child, watched from this thread ------------------

using Clock = std::chrono::steady_clock;

// poll()'s timeout until deadline; 0 once it has passed.
int milliseconds_left(Clock::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
}

// What has been seen of the child so far.
struct Watch {
  const SpawnSpec& spec;
  Child& child;
  int output_fd = -1;
  CapturedRun run;
  bool output_open = true;
  std::optional<int> wait_status;

  bool done() const { return !output_open && wait_status; }

  // Appends what the child wrote; EOF once it and the shim have closed it.
  Expected<void> read_output() {
    char buffer[4096];
    ssize_t got = ::read(output_fd, buffer, sizeof buffer);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) return {};
    if (got < 0) {
      return fail(ErrorCode::internal,
                  "reading the output of " + spec.executable + " failed: " + errno_text(errno));
    }
    if (got == 0) output_open = false;
    run.output.append(buffer, static_cast<std::size_t>(got));
    return {};
  }

  // Reads the shim's records (each arrives whole): an exec failure becomes
  // the error, `exited` the wait status.
  Expected<void> read_records() {
    for (;;) {
      ShimRecord record;
      ssize_t got = ::read(child.report.get(), &record, sizeof record);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && errno == EAGAIN) return {};
      if (got != static_cast<ssize_t>(sizeof record)) {
        return fail(ErrorCode::internal,
                    "the shim of " + spec.executable + " ended without its exit status");
      }
      if (record.kind == ShimRecord::exec_failed || record.kind == ShimRecord::fork_failed) {
        return tl::unexpected(start_failure(spec, record));
      }
      if (record.kind == ShimRecord::exited) {
        wait_status = record.value;
        return {};
      }
    }
  }

  // Until done or deadline; what is left running afterwards is the
  // caller's to end.
  Expected<void> until(Clock::time_point deadline) {
    while (!done()) {
      int left = milliseconds_left(deadline);
      if (left == 0) return {};
      pollfd watched[2] = {{output_open ? output_fd : -1, POLLIN, 0},
                           {wait_status ? -1 : child.report.get(), POLLIN, 0}};
      if (::poll(watched, 2, left) < 0) {
        if (errno == EINTR) continue;
        return fail(ErrorCode::internal, "poll failed: " + errno_text(errno));
      }
      if (watched[0].revents != 0) {
        if (auto read = read_output(); !read) return read;
      }
      if (watched[1].revents != 0) {
        if (auto read = read_records(); !read) return read;
      }
    }
    return {};
  }
};

Expected<CapturedRun> capture(const SpawnSpec& spec, std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  auto output = make_pipe();
  if (!output) return cannot_start(spec, output.error().message());
  SpawnSpec to_pipe = spec;
  to_pipe.stdout_fd = output->write_end.get();
  if (spec.stderr_fd == k_stderr_to_output) to_pipe.stderr_fd = output->write_end.get();
  Expected<Child> child = spawn(to_pipe);
  // From here only the child (and, until it has started the child, the
  // shim) holds the write end: EOF means the child closed its stdout.
  output->write_end.reset();
  if (!child) return pass_up(std::move(child));

  Watch watch{spec, *child, output->read_end.get(), {}, true, std::nullopt};
  Expected<void> watched = watch.until(deadline);
  // The shim's cue to SIGKILL whatever is left of the child's tree and
  // exit (shim.hpp); its pid stays ours until reaped here.
  child->control.reset();
  reap(child->shim_pid);
  if (!watched) return pass_up(std::move(watched));
  if (watch.done()) watch.run.status = ExitStatus::from_wait_status(*watch.wait_status);
  return std::move(watch.run);
}

}  // namespace

Expected<Child> spawn(const SpawnSpec& spec) {
  try {
    return spawn_under_shim(spec);
  } catch (const std::exception& error) {
    return cannot_start(spec, error.what());
  }
}

Error start_failure(const SpawnSpec& spec, const ShimRecord& record) {
  if (record.kind == ShimRecord::exec_failed) {
    ErrorCode code = classify_exec_error(record.value);
    if (code != ErrorCode::internal)
      return {code, explain_exec_error(spec.executable, record.value)};
    return {code, "cannot start " + spec.executable + ": " + errno_text(record.value)};
  }
  return {ErrorCode::internal,
          "cannot start " + spec.executable + ": fork failed: " + errno_text(record.value)};
}

Expected<CapturedRun> run_to_completion(const SpawnSpec& spec, std::chrono::milliseconds timeout) {
  try {
    return capture(spec, timeout);
  } catch (const std::exception& error) {
    return cannot_start(spec, error.what());
  }
}

Expected<void> become_subreaper() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
    return fail(ErrorCode::internal, "prctl(PR_SET_CHILD_SUBREAPER) failed: " + errno_text(errno));
  }
  return {};
}

}  // namespace gangrun::supervise
