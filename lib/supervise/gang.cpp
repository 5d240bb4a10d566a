#include "supervise/gang.hpp"

#include "logmux/tail_buffer.hpp"
#include "supervise/orphans.hpp"
#include "util/pipe.hpp"
#include "util/signals.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

namespace gangrun::supervise {
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

// After the last worker is gone, output still buffered in the pipes is
// drained; a pipe that some unkillable process still holds open is cut off
// after this long.
constexpr std::chrono::milliseconds k_drain_limit{2000};

double milliseconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

struct Gang::Impl {
  struct Running {
    std::unique_ptr<asio::posix::stream_descriptor> pidfd;
    bool alive = false;
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
  std::vector<Running> running;
  std::vector<logmux::TailBuffer> tails;
  AttemptOutcome outcome;
  std::size_t alive_count = 0;
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
    reset(workers.size());
    for (std::size_t i = 0; i < workers.size(); ++i) {
      outcome.workers[i].rank = workers[i].rank;
      outcome.workers[i].local_rank = workers[i].local_rank;
    }
    if (stop_signal) {
      outcome.stopped_by_signal = stop_signal;
      return std::move(outcome);
    }
    for (std::size_t i = 0; i < workers.size() && !tearing_down; ++i) start_worker(i, workers[i]);
    if (alive_count == 0) on_all_exited();
    io.restart();
    while (!finished) {
      if (io.run_one() == 0) break;  // nothing left to wait for: cannot happen while armed
    }
    for (std::size_t i = 0; i < tails.size(); ++i) outcome.workers[i].last_lines = tails[i].lines();
    mux.reset();
    return std::move(outcome);
  }

  void reset(std::size_t worker_count) {
    mux = std::make_unique<logmux::OutputMux>(io, console);
    running.clear();
    running.resize(worker_count);
    tails.assign(worker_count, logmux::TailBuffer());
    outcome = AttemptOutcome{};
    outcome.workers.resize(worker_count);
    alive_count = 0;
    tearing_down = false;
    all_exited = false;
    finished = false;
  }

  void start_worker(std::size_t index, WorkerLaunch& launch) {
    WorkerOutcome& worker = outcome.workers[index];
    auto started = start_process(index, launch);
    worker.started_at = std::chrono::system_clock::now();
    if (!started) {
      worker.spawn_error = started.error().describe();
      worker.status = ExitStatus::exited_with(started.error().exit_code());
      worker.ended_at = worker.started_at;
      spdlog::error("rank {} could not be started: {}", worker.rank, *worker.spawn_error);
      on_failure(index, Clock::now());
    }
  }

  Expected<void> start_process(std::size_t index, WorkerLaunch& launch) {
    std::optional<Pipe> out_pipe;
    std::optional<Pipe> err_pipe;
    if (launch.stdout_route) {
      auto made = make_pipe();
      if (!made) return tl::unexpected(made.error());
      out_pipe = std::move(*made);
      launch.spawn.stdout_fd = out_pipe->write_end.get();
    }
    if (launch.stderr_route) {
      auto made = make_pipe();
      if (!made) return tl::unexpected(made.error());
      err_pipe = std::move(*made);
      launch.spawn.stderr_fd = err_pipe->write_end.get();
    }
    auto child = spawn(launch.spawn);
    if (!child) return tl::unexpected(child.error());

    Running& slot = running[index];
    slot.alive = true;
    slot.started = Clock::now();
    slot.pidfd = std::make_unique<asio::posix::stream_descriptor>(io, child->pidfd.release());
    outcome.workers[index].pid = child->pid;
    ++alive_count;
    slot.pidfd->async_wait(asio::posix::stream_descriptor::wait_read,
                           [this, index](const boost::system::error_code& error) {
                             if (!error) on_worker_exit(index);
                           });

    // The children hold their own copies of the write ends now; ours must go
    // so that EOF arrives when the worker (and its descendants) are gone.
    if (out_pipe) {
      out_pipe->write_end.reset();
      auto added = mux->add_stream(std::move(out_pipe->read_end), *launch.stdout_route,
                                   &tails[index], [this] { on_stream_closed(); });
      if (!added)
        spdlog::warn("rank {}: {}", outcome.workers[index].rank, added.error().describe());
    }
    if (err_pipe) {
      err_pipe->write_end.reset();
      auto added = mux->add_stream(std::move(err_pipe->read_end), *launch.stderr_route,
                                   &tails[index], [this] { on_stream_closed(); });
      if (!added)
        spdlog::warn("rank {}: {}", outcome.workers[index].rank, added.error().describe());
    }
    return {};
  }

  // ---- events ---------------------------------------------------------------

  void on_worker_exit(std::size_t index) {
    Running& slot = running[index];
    WorkerOutcome& worker = outcome.workers[index];
    int wait_status = 0;
    rusage usage{};
    pid_t reaped = ::wait4(worker.pid, &wait_status, WNOHANG, &usage);
    if (reaped == 0) {  // spurious wake-up; the pidfd is level-triggered
      slot.pidfd->async_wait(asio::posix::stream_descriptor::wait_read,
                             [this, index](const boost::system::error_code& error) {
                               if (!error) on_worker_exit(index);
                             });
      return;
    }
    Clock::time_point now = Clock::now();
    worker.ended_at = std::chrono::system_clock::now();
    worker.status = reaped == worker.pid ? ExitStatus::from_wait_status(wait_status)
                                         : ExitStatus::exited_with(1);
    worker.peak_rss_kib = usage.ru_maxrss;
    worker.stopped_by_gangrun = slot.signalled;
    slot.alive = false;
    slot.pidfd.reset();
    --alive_count;
    spdlog::debug("rank {} (pid {}) ended: {}", worker.rank, worker.pid, worker.status.describe());

    if (!worker.status.success() && !slot.signalled) on_failure(index, now);
    if (alive_count == 0) on_all_exited();
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

  void signal_workers(int signal_number, bool marks_stopped) {
    for (std::size_t i = 0; i < running.size(); ++i) {
      if (!running[i].alive) continue;
      if (marks_stopped) running[i].signalled = true;
      // Each worker leads its own session and group: the group reaches the
      // worker's whole tree unless a descendant moved away (orphan handling
      // catches those once their parent is gone).
      ::killpg(outcome.workers[i].pid, signal_number);
    }
  }

  void on_all_exited() {
    if (all_exited) return;
    all_exited = true;
    kill_timer.cancel();
    // Whatever is left of the job: members of the workers' groups that
    // outlived them, and descendants that escaped into sessions of their own.
    for (const WorkerOutcome& worker : outcome.workers) {
      if (worker.pid > 0) ::killpg(worker.pid, SIGKILL);
    }
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
    if (all_exited && mux->open_streams() == 0) {
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
        std::set<pid_t> workers;
        for (std::size_t i = 0; i < running.size(); ++i) {
          if (running[i].alive) workers.insert(outcome.workers[i].pid);
        }
        reap_exited_orphans(workers);
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
      if (alive_count == 0) return;
      spdlog::warn("received {}; stopping the workers (send it again to kill them at once)",
                   signals::name(signal_number));
      start_teardown(signal_number);
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
