#include "supervise/gang.hpp"

#include "logmux/tail_buffer.hpp"
#include "supervise/orphans.hpp"
#include "supervise/shim.hpp"
#include "util/pipe.hpp"
#include "util/signals.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <exception>
#include <tuple>

namespace gangrun::supervise {
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

// After the last worker is gone, output still buffered in the pipes is
// drained; a pipe that some unkillable process still holds open is cut off
// after this long.
constexpr std::chrono::milliseconds k_drain_limit{2000};
// Shims are asked to end their trees when the last worker has ended; one
// that has not exited after this long is killed.
constexpr std::chrono::milliseconds k_shim_limit{5000};

double milliseconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

struct Gang::Impl {
  struct Running {
    UniqueFd control;  // to the shim; closing it ends what is left of the tree
    std::unique_ptr<asio::posix::stream_descriptor> report;     // from the shim
    std::unique_ptr<asio::posix::stream_descriptor> shim_exit;  // the shim's pidfd
    ShimRecord record;
    pid_t shim_pid = -1;
    bool alive = false;         // the worker's end has not been seen yet
    bool shim_running = false;  // the shim has not been reaped yet
    bool signalled = false;
    Clock::time_point started;
  };

  asio::io_context& io;
  logmux::Console& console;
  GangSettings settings;
  asio::signal_set signal_set;
  asio::steady_timer kill_timer;
  asio::steady_timer drain_timer;

  std::optional<int> stop_signal;

  // Per attempt.
  std::unique_ptr<logmux::OutputMux> mux;
  std::vector<WorkerLaunch> launches;
  std::vector<Running> running;
  std::vector<logmux::TailBuffer> tails;
  AttemptOutcome outcome;
  std::size_t alive_count = 0;
  std::size_t shims_running = 0;
  bool spawning = false;
  bool tearing_down = false;
  bool all_exited = false;
  bool finished = false;
  Clock::time_point root_cause_exit;

  Impl(asio::io_context& io_context, logmux::Console& console_sink, GangSettings gang_settings)
      : io(io_context),
        console(console_sink),
        settings(std::move(gang_settings)),
        signal_set(io_context),
        kill_timer(io_context),
        drain_timer(io_context) {
    std::set<int> handled = settings.teardown_signals;
    handled.insert({SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT, SIGCHLD});
    for (int signal_number : handled) signal_set.add(signal_number);
    arm_signals();
  }

  // ---- the attempt ----------------------------------------------------------

  AttemptOutcome run(std::vector<WorkerLaunch> workers) {
    reset(std::move(workers));
    if (stop_signal) {
      outcome.stopped_by_signal = stop_signal;
      mark_not_started(0);
      return std::move(outcome);
    }
    spawning = true;
    asio::post(io, [this] { start_next(0); });
    io.restart();
    while (!finished) {
      if (io.run_one() == 0) break;  // nothing left to wait for: cannot happen while armed
    }
    for (std::size_t i = 0; i < tails.size(); ++i) outcome.workers[i].last_lines = tails[i].lines();
    outcome.incomplete_logs = mux->incomplete_logs();
    mux.reset();
    launches.clear();
    return std::move(outcome);
  }

  void reset(std::vector<WorkerLaunch> workers) {
    mux = std::make_unique<logmux::OutputMux>(io, console);
    launches = std::move(workers);
    running.clear();
    running.resize(launches.size());
    tails.assign(launches.size(), logmux::TailBuffer());
    outcome = AttemptOutcome{};
    outcome.workers.resize(launches.size());
    for (std::size_t i = 0; i < launches.size(); ++i) {
      outcome.workers[i].rank = launches[i].rank;
      outcome.workers[i].local_rank = launches[i].local_rank;
    }
    alive_count = 0;
    shims_running = 0;
    spawning = false;
    tearing_down = false;
    all_exited = false;
    finished = false;
  }

  // One worker per turn of the loop: a signal or a failure seen in between
  // stops the spawning of a large gang at once.
  void start_next(std::size_t index) {
    if (tearing_down || index == launches.size()) {
      mark_not_started(index);
      spawning = false;
      if (alive_count == 0) on_all_exited();
      return;
    }
    start_worker(index);
    asio::post(io, [this, index] { start_next(index + 1); });
  }

  void mark_not_started(std::size_t from) {
    for (std::size_t i = from; i < outcome.workers.size(); ++i) outcome.workers[i].started = false;
  }

  void start_worker(std::size_t index) {
    WorkerOutcome& worker = outcome.workers[index];
    auto started = start_process(index, launches[index]);
    worker.started_at = std::chrono::system_clock::now();
    if (!started) {
      record_start_failure(worker, started.error());
      worker.status = ExitStatus::exited_with(started.error().exit_code());
      worker.ended_at = worker.started_at;
      on_failure(index, Clock::now());
    }
  }

  // Spawning failed in gangrun (start_worker) or in the shim (on_record).
  static void record_start_failure(WorkerOutcome& worker, const Error& error) {
    worker.spawn_error = error.describe();
    spdlog::error("rank {} could not be started: {}", worker.rank, *worker.spawn_error);
  }

  Expected<void> start_process(std::size_t index, WorkerLaunch& launch) {
    try {
      return start_process_or_throw(index, launch);
    } catch (const std::exception& error) {
      // Asio reports a failed epoll registration (out of memory or watches)
      // by throwing; the shim, if started, ends with its control pipe.
      return fail(ErrorCode::internal,
                  "cannot start " + launch.spawn.executable + ": " + error.what());
    }
  }

  Expected<void> start_process_or_throw(std::size_t index, WorkerLaunch& launch) {
    std::optional<Pipe> out_pipe;
    std::optional<Pipe> err_pipe;
    for (auto [route, pipe, fd] :
         {std::tuple{&launch.stdout_route, &out_pipe, &launch.spawn.stdout_fd},
          std::tuple{&launch.stderr_route, &err_pipe, &launch.spawn.stderr_fd}}) {
      if (!*route) continue;
      auto made = make_pipe();
      if (!made) {
        return fail(ErrorCode::internal,
                    "cannot start " + launch.spawn.executable + ": " + made.error().message());
      }
      *pipe = std::move(*made);
      *fd = (*pipe)->write_end.get();
    }
    auto child = spawn(launch.spawn);
    if (!child) return tl::unexpected(child.error());

    // Registered with the loop before anything is counted: if Asio throws
    // here, the descriptors close with `child`, the shim sees its control
    // pipe close and exits, and the stray-child reaper collects it.
    auto shim_exit = std::make_unique<asio::posix::stream_descriptor>(io, child->shim_pidfd.get());
    child->shim_pidfd.release();
    auto report = std::make_unique<asio::posix::stream_descriptor>(io, child->report.get());
    child->report.release();

    Running& slot = running[index];
    slot.control = std::move(child->control);
    slot.shim_pid = child->shim_pid;
    slot.shim_running = true;
    ++shims_running;
    slot.shim_exit = std::move(shim_exit);
    slot.report = std::move(report);
    slot.alive = true;
    slot.started = Clock::now();
    ++alive_count;  // its pid comes with the shim's first record
    wait_for_report(index);
    wait_for_shim_exit(index);

    // The worker holds its own copies of the write ends now; ours must go
    // so that EOF arrives when the worker (and its descendants) are gone.
    for (auto [route, pipe] :
         {std::pair{&launch.stdout_route, &out_pipe}, std::pair{&launch.stderr_route, &err_pipe}}) {
      if (!*pipe) continue;
      (*pipe)->write_end.reset();
      auto added = mux->add_stream(std::move((*pipe)->read_end), **route, &tails[index],
                                   [this] { on_stream_closed(); });
      if (!added)
        spdlog::warn("rank {}: {}", outcome.workers[index].rank, added.error().describe());
    }
    return {};
  }

  // ---- events ---------------------------------------------------------------

  void wait_for_report(std::size_t index) {
    running[index].report->async_wait(asio::posix::stream_descriptor::wait_read,
                                      [this, index](const boost::system::error_code& error) {
                                        if (!error) on_report(index);
                                      });
  }

  void wait_for_shim_exit(std::size_t index) {
    running[index].shim_exit->async_wait(asio::posix::stream_descriptor::wait_read,
                                         [this, index](const boost::system::error_code& error) {
                                           if (!error) on_shim_exit(index);
                                         });
  }

  void on_report(std::size_t index) {
    if (read_records(index)) wait_for_report(index);
  }

  // Handles every record the pipe holds now; false once it reached EOF (the
  // shim is gone: on_shim_exit has the rest).
  bool read_records(std::size_t index) {
    Running& slot = running[index];
    while (slot.report) {
      ssize_t got = ::read(slot.report->native_handle(), &slot.record, sizeof slot.record);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && errno == EAGAIN) return true;
      if (got != static_cast<ssize_t>(sizeof slot.record)) {
        slot.report.reset();
        return false;
      }
      on_record(index, slot.record);
    }
    return false;
  }

  void on_record(std::size_t index, const ShimRecord& record) {
    WorkerOutcome& worker = outcome.workers[index];
    switch (record.kind) {
      case ShimRecord::started:
        worker.pid = record.value;
        return;
      case ShimRecord::exited:
        on_worker_end(index, ExitStatus::from_wait_status(record.value),
                      static_cast<long>(record.peak_rss_kib));
        return;
      default: {  // exec_failed, fork_failed
        Error error = start_failure(launches[index].spawn, record);
        record_start_failure(worker, error);
        on_worker_end(index, ExitStatus::exited_with(error.exit_code()), 0);
        return;
      }
    }
  }

  void on_shim_exit(std::size_t index) {
    Running& slot = running[index];
    int wait_status = 0;
    rusage usage{};
    pid_t reaped = ::wait4(slot.shim_pid, &wait_status, WNOHANG, &usage);
    if (reaped == 0) {  // spurious wake-up; the pidfd is level-triggered
      wait_for_shim_exit(index);
      return;
    }
    slot.shim_running = false;
    slot.shim_exit.reset();
    --shims_running;
    // What the shim wrote before it exited may not have been read yet.
    read_records(index);
    if (slot.alive) {
      // The shim ended before reporting the worker's end: someone killed
      // it, and the worker died with it (its death signal).
      ExitStatus status = ExitStatus::from_wait_status(wait_status);
      spdlog::warn(
          "rank {}: its supervising shim (pid {}) ended by itself ({}); the worker is lost",
          outcome.workers[index].rank, slot.shim_pid, status.describe());
      on_worker_end(index, status, usage.ru_maxrss);
    }
    if (all_exited && shims_running == 0) on_shims_gone();
  }

  void on_worker_end(std::size_t index, ExitStatus status, long peak_rss_kib) {
    Running& slot = running[index];
    if (!slot.alive) return;  // seen already
    WorkerOutcome& worker = outcome.workers[index];
    Clock::time_point now = Clock::now();
    worker.ended_at = std::chrono::system_clock::now();
    worker.status = status;
    worker.peak_rss_kib = peak_rss_kib;
    worker.stopped_by_gangrun = slot.signalled;
    slot.alive = false;
    --alive_count;
    spdlog::debug("rank {} (pid {}) ended: {}", worker.rank, worker.pid, worker.status.describe());

    if (!worker.status.success() && !slot.signalled) on_failure(index, now);
    if (alive_count == 0 && !spawning) on_all_exited();
  }

  void on_failure(std::size_t index, Clock::time_point exited_at) {
    if (outcome.root_cause || tearing_down) return;
    outcome.root_cause = index;
    root_cause_exit = exited_at;
    const WorkerOutcome& worker = outcome.workers[index];
    spdlog::debug("rank {} failed ({}); stopping the others", worker.rank,
                  worker.status.describe());
    start_teardown(SIGTERM);
    if (alive_count > 0) {
      outcome.teardown_latency_ms = milliseconds_between(root_cause_exit, Clock::now());
    }
  }

  void start_teardown(int stop_with) {
    tearing_down = true;
    signal_workers(stop_with, true);
    if (alive_count == 0) return;
    kill_timer.expires_after(settings.term_timeout);
    kill_timer.async_wait([this](const boost::system::error_code& error) {
      if (error) return;
      spdlog::warn("workers still running {:.3g} s after the stop signal; sending SIGKILL",
                   std::chrono::duration<double>(settings.term_timeout).count());
      signal_workers(SIGKILL, true);
    });
  }

  // Asks every live worker's shim to deliver signal_number to the worker's
  // process group (SIGKILL: to everything under the shim).
  void signal_workers(int signal_number, bool marks_stopped) {
    const auto request = static_cast<unsigned char>(signal_number);
    for (Running& slot : running) {
      if (!slot.alive || !slot.control.valid()) continue;
      if (marks_stopped) slot.signalled = true;
      // A full pipe would mean 64 KiB of requests the shim has not read yet;
      // dropping one more changes nothing.
      (void)!::write(slot.control.get(), &request, 1);
    }
  }

  void on_all_exited() {
    if (all_exited) return;
    all_exited = true;
    kill_timer.cancel();
    // Whatever is left of each worker's tree (group members that outlived
    // it, descendants that escaped into sessions of their own) is under its
    // shim: closing the control pipe makes the shim kill it all and exit.
    for (Running& slot : running) slot.control.reset();
    if (shims_running == 0) {
      on_shims_gone();
      return;
    }
    // A shim stuck killing a process in uninterruptible sleep must not hold
    // the run forever.
    kill_timer.expires_after(k_shim_limit);
    kill_timer.async_wait([this](const boost::system::error_code& error) {
      if (error) return;
      for (Running& slot : running) {
        if (slot.shim_running)
          ::syscall(SYS_pidfd_send_signal, slot.shim_exit->native_handle(), SIGKILL, nullptr, 0);
      }
    });
  }

  void on_shims_gone() {
    kill_timer.cancel();
    // Descendants of a shim that was killed came back to gangrun, the
    // subreaper above the shims.
    int killed = kill_orphans({});
    if (killed > 0) spdlog::debug("killed {} leftover process(es) of the job", killed);
    if (mux->open_streams() == 0) {
      finished = true;
      return;
    }
    drain_timer.expires_after(k_drain_limit);
    drain_timer.async_wait([this](const boost::system::error_code& error) {
      if (error) return;
      spdlog::debug("output pipes still open after the workers ended; closing them");
      mux->close_all();
      finished = true;
    });
  }

  void on_stream_closed() {
    if (all_exited && shims_running == 0 && mux->open_streams() == 0) {
      drain_timer.cancel();
      finished = true;
    }
  }

  // ---- signals ----------------------------------------------------------------

  void arm_signals() {
    signal_set.async_wait([this](const boost::system::error_code& error, int signal_number) {
      if (error) return;
      on_signal(signal_number);
      arm_signals();
    });
  }

  void on_signal(int signal_number) {
    if (settings.teardown_signals.count(signal_number) != 0) {
      on_teardown_signal(signal_number);
      return;
    }
    switch (signal_number) {
      case SIGCHLD: {
        // Shims are reaped by their own pidfd handler; anything else that
        // ended is a stray (a shim whose worker could not start, an orphan
        // of a killed shim).
        std::set<pid_t> shims;
        for (const Running& slot : running) {
          if (slot.shim_running) shims.insert(slot.shim_pid);
        }
        reap_exited_orphans(shims);
        return;
      }
      case SIGTSTP:
        // Workers lead orphaned process groups, where the kernel discards
        // SIGTSTP; SIGSTOP is the only stop that reaches them.
        signal_workers(SIGSTOP, false);
        ::raise(SIGSTOP);
        return;
      case SIGCONT:
        signal_workers(SIGCONT, false);
        return;
      default:  // USR1, USR2: the training script's business (SLURM preemption notices)
        spdlog::info("forwarding {} to the workers", signals::name(signal_number));
        signal_workers(signal_number, false);
        return;
    }
  }

  void on_teardown_signal(int signal_number) {
    if (!stop_signal) {
      stop_signal = signal_number;
      outcome.stopped_by_signal = signal_number;
      if (alive_count > 0) {
        spdlog::warn("received {}; stopping the workers (send it again to kill them at once)",
                     signals::name(signal_number));
      }
      start_teardown(signal_number);  // also stops a spawning in progress
      return;
    }
    if (alive_count == 0) return;
    spdlog::warn("received {} again; killing the workers now", signals::name(signal_number));
    kill_timer.cancel();
    signal_workers(SIGKILL, true);
  }
};

Gang::Gang(asio::io_context& io, logmux::Console& console, GangSettings settings)
    : impl_(std::make_unique<Impl>(io, console, std::move(settings))) {}

Gang::~Gang() = default;

AttemptOutcome Gang::run(std::vector<WorkerLaunch> workers) {
  return impl_->run(std::move(workers));
}

}  // namespace gangrun::supervise
