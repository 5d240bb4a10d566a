#include "supervise/gang.hpp"

#include "logmux/tail_buffer.hpp"
#include "logmux/write_all.hpp"
#include "util/pipe.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <csignal>
#include <exception>
#include <tuple>

namespace gangrun::supervise {
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

double milliseconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

struct Gang::Impl {
  struct Running {
    std::shared_ptr<WorkerProcess> process;
    bool alive = false;             // started, and its end not seen yet
    bool supervisor_alive = false;  // its supervisor has not been reaped yet
    bool signalled = false;         // asked to stop by gangrun
    UniqueFd stdin_writer;          // WorkerLaunch::stdin_first_line: closed to stop it
  };

  asio::io_context& io;
  logmux::Console& console;
  Spawner& spawner;
  GangSettings settings;
  asio::steady_timer kill_timer;
  asio::steady_timer drain_timer;
  asio::steady_timer failure_window_timer;

  // Per attempt. `attempt` changes with every start(), so a handler posted
  // for one attempt does nothing in the next.
  std::uint64_t attempt = 0;
  DoneHandler on_done;
  std::unique_ptr<logmux::OutputMux> mux;
  std::vector<WorkerLaunch> launches;
  std::vector<Running> running;
  std::vector<logmux::TailBuffer> tails;
  AttemptOutcome outcome;
  std::size_t alive_count = 0;
  std::size_t supervisors_alive = 0;
  bool active = false;
  bool spawning = false;
  bool tearing_down = false;
  bool all_exited = false;
  bool window_open = false;  // a worker failed; the others may still end by themselves
  Clock::time_point first_failure_exit;

  Impl(asio::io_context& io_context, logmux::Console& console_sink, Spawner& process_spawner,
       GangSettings gang_settings)
      : io(io_context),
        console(console_sink),
        spawner(process_spawner),
        settings(std::move(gang_settings)),
        kill_timer(io_context),
        drain_timer(io_context),
        failure_window_timer(io_context) {}

  // ---- the attempt ----------------------------------------------------------

  void start(std::vector<WorkerLaunch> workers, DoneHandler done) {
    ++attempt;
    on_done = std::move(done);
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
    supervisors_alive = 0;
    active = true;
    spawning = true;
    tearing_down = false;
    all_exited = false;
    window_open = false;
    post([this] { start_next(0); });
  }

  // Runs f on the loop unless the attempt it belongs to has ended.
  template <typename F>
  void post(F f) {
    asio::post(io, [this, f = std::move(f), for_attempt = attempt] {
      if (active && for_attempt == attempt) f();
    });
  }

  void finish() {
    for (std::size_t i = 0; i < tails.size(); ++i) outcome.workers[i].last_lines = tails[i].lines();
    outcome.incomplete_logs = mux->incomplete_logs();
    mux.reset();
    launches.clear();
    running.clear();
    active = false;
    // The handler may start the next attempt at once.
    DoneHandler done = std::move(on_done);
    done(std::move(outcome));
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
    post([this, index] { start_next(index + 1); });
  }

  void mark_not_started(std::size_t from) {
    for (std::size_t i = from; i < outcome.workers.size(); ++i) outcome.workers[i].started = false;
  }

  void start_worker(std::size_t index) {
    WorkerOutcome& worker = outcome.workers[index];
    auto started = start_process(index, launches[index]);
    worker.started_at = std::chrono::system_clock::now();
    if (!started) {
      record_start_failure(index, started.error());
      worker.status = ExitStatus::exited_with(started.error().exit_code());
      worker.ended_at = worker.started_at;
      on_failure(index, Clock::now());
    }
  }

  // Spawning failed in gangrun (start_worker) or under the supervisor.
  void record_start_failure(std::size_t index, const Error& error) {
    outcome.workers[index].spawn_error = error;
    spdlog::error("{} could not be started: {}", who(index), error.describe());
  }

  // How messages name a worker.
  std::string who(std::size_t index) const {
    if (index < launches.size() && !launches[index].name.empty()) return launches[index].name;
    return "rank " + std::to_string(outcome.workers[index].rank);
  }

  Expected<void> start_process(std::size_t index, WorkerLaunch& launch) {
    try {
      return start_process_or_throw(index, launch);
    } catch (const std::exception& error) {
      // Asio reports a failed epoll registration (out of memory or watches)
      // by throwing.
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
    std::optional<Pipe> in_pipe;
    if (launch.stdin_first_line) {
      auto made = make_pipe();
      if (!made) {
        return fail(ErrorCode::internal,
                    "cannot start " + launch.spawn.executable + ": " + made.error().message());
      }
      in_pipe = std::move(*made);
      // An empty pipe holds far more than one line: this never blocks.
      if (!launch.stdin_first_line->empty() &&
          logmux::write_all(in_pipe->write_end.get(), *launch.stdin_first_line + "\n") != 0) {
        return fail(ErrorCode::internal, "cannot write to the stdin of " + launch.spawn.executable);
      }
      launch.spawn.stdin_fd = in_pipe->read_end.get();
    }
    GANGRUN_TRY_ASSIGN(process, spawner.start(launch.spawn, events_for(index)));

    Running& slot = running[index];
    if (in_pipe) slot.stdin_writer = std::move(in_pipe->write_end);
    slot.process = std::move(*process);
    slot.alive = true;
    slot.supervisor_alive = true;
    ++alive_count;  // its pid comes with on_running
    ++supervisors_alive;

    // The worker holds its own copies of the write ends now; ours must go
    // so that EOF arrives when the worker (and its descendants) are gone.
    for (auto [route, pipe] :
         {std::pair{&launch.stdout_route, &out_pipe}, std::pair{&launch.stderr_route, &err_pipe}}) {
      if (!*pipe) continue;
      (*pipe)->write_end.reset();
      auto added = mux->add_stream(std::move((*pipe)->read_end), **route, &tails[index],
                                   [this] { on_stream_closed(); });
      if (!added) spdlog::warn("{}: {}", who(index), added.error().describe());
    }
    return {};
  }

  // ---- events ---------------------------------------------------------------

  // Events of an earlier attempt's worker are ignored: its slot is gone.
  WorkerEvents events_for(std::size_t index) {
    auto current = [this, index, for_attempt = attempt] {
      return active && for_attempt == attempt && index < running.size();
    };
    WorkerEvents events;
    events.on_running = [this, index, current](pid_t pid) {
      if (current()) outcome.workers[index].pid = pid;
    };
    events.on_exited = [this, index, current](ExitStatus status, long peak_rss_kib) {
      if (current()) on_worker_end(index, status, peak_rss_kib);
    };
    events.on_start_failed = [this, index, current](const Error& error) {
      if (!current()) return;
      record_start_failure(index, error);
      on_worker_end(index, ExitStatus::exited_with(error.exit_code()), 0);
    };
    events.on_supervisor_gone = [this, index, current](ExitStatus status, long peak_rss_kib) {
      if (current()) on_supervisor_gone(index, status, peak_rss_kib);
    };
    return events;
  }

  void on_supervisor_gone(std::size_t index, ExitStatus status, long peak_rss_kib) {
    Running& slot = running[index];
    if (!slot.supervisor_alive) return;
    slot.supervisor_alive = false;
    --supervisors_alive;
    slot.stdin_writer.reset();
    if (slot.alive) {
      // The supervisor ended before reporting the worker's end: someone
      // killed it, and the worker died with it (its death signal).
      spdlog::warn("{}: its supervising shim (pid {}) ended by itself ({}); the worker is lost",
                   who(index), slot.process->supervisor_pid(), status.describe());
      on_worker_end(index, status, peak_rss_kib);
    }
    if (all_exited && supervisors_alive == 0) on_supervisors_gone();
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
    outcome.end_order.push_back(index);
    spdlog::debug("{} (pid {}) ended: {}", who(index), worker.pid, worker.status.describe());

    if (!worker.status.success() && !slot.signalled) {
      on_failure(index, now);
    } else if (window_open && alive_count == 0) {
      close_failure_window();
    }
    if (alive_count == 0 && !spawning) on_all_exited();
  }

  // A worker failed by itself. The first failure opens the window in which
  // the others may end by themselves (a failure at start, or while the gang
  // is still being started, closes it at once: nobody waits for anyone).
  void on_failure(std::size_t index, Clock::time_point exited_at) {
    if (tearing_down) return;
    const WorkerOutcome& worker = outcome.workers[index];
    if (!outcome.first_failure) {
      outcome.first_failure = index;
      first_failure_exit = exited_at;
      spdlog::debug("{} failed ({})", who(index), worker.status.describe());
    }
    if (settings.on_failure) settings.on_failure(outcome);
    if (window_open) {
      if (alive_count == 0) close_failure_window();
      return;
    }
    bool worth_waiting =
        settings.failure_window.count() > 0 && alive_count > 0 && !spawning && !worker.spawn_error;
    if (!worth_waiting) return close_failure_window(true);
    window_open = true;
    if (settings.failure_window == k_until_all_ended) return;
    failure_window_timer.expires_after(settings.failure_window);
    failure_window_timer.async_wait(
        [this, for_attempt = attempt](const boost::system::error_code& error) {
          if (!error && active && for_attempt == attempt) close_failure_window();
        });
  }

  // Ends the window with the first failure as the root cause, for now.
  void shut_failure_window() {
    window_open = false;
    failure_window_timer.cancel();
    outcome.root_cause = outcome.first_failure;
  }

  // Decides the root cause (report/blame.hpp) and stops the others.
  void close_failure_window(bool force = false) {
    if ((!window_open && !force) || tearing_down || !outcome.first_failure) return;
    shut_failure_window();
    outcome.blame = report::find_waited_for(fates());
    if (outcome.blame) {
      for (std::size_t i = 0; i < outcome.workers.size(); ++i) {
        if (outcome.workers[i].rank == outcome.blame->waited_for.front()) outcome.root_cause = i;
      }
      spdlog::debug("{}", report::describe(*outcome.blame));
    }
    start_teardown(SIGTERM);
    if (alive_count > 0) {
      outcome.teardown_latency_ms = milliseconds_between(first_failure_exit, Clock::now());
    }
  }

  std::vector<report::RankFate> fates() const {
    std::vector<report::RankFate> all;
    for (std::size_t i = 0; i < outcome.workers.size(); ++i) {
      const WorkerOutcome& worker = outcome.workers[i];
      if (!running[i].process && !worker.spawn_error) continue;  // not started (yet)
      report::RankFate fate{.rank = worker.rank,
                            .state = report::RankFate::State::running,
                            .ended_at = worker.ended_at};
      if (!running[i].alive && worker.started && !running[i].signalled) {
        fate.state = worker.status.success() ? report::RankFate::State::succeeded
                                             : report::RankFate::State::failed;
      }
      all.push_back(fate);
    }
    return all;
  }

  void start_teardown(int stop_with) {
    tearing_down = true;
    ask_to_stop(stop_with);
    if (alive_count == 0 || !settings.term_timeout) return;
    kill_timer.expires_after(*settings.term_timeout);
    kill_timer.async_wait([this](const boost::system::error_code& error) {
      if (error) return;
      spdlog::warn("workers still running {:.3g} s after the stop signal; sending SIGKILL",
                   std::chrono::duration<double>(*settings.term_timeout).count());
      signal_workers(SIGKILL, true);
    });
  }

  // The first request to stop: a worker whose stdin the gang holds sees it
  // close; any other (or one whose stdin is closed already) gets the signal.
  void ask_to_stop(int signal_number) {
    for (Running& slot : running) {
      if (!slot.alive || !slot.process) continue;
      slot.signalled = true;
      if (slot.stdin_writer.valid()) {
        slot.stdin_writer.reset();
      } else {
        send_stop(slot, signal_number);
      }
    }
  }

  // A teardown's signal to one worker's group, and SIGCONT after it. A
  // worker stopped from outside (kill -STOP, a debugger, a job its scheduler
  // suspended) acts on no signal but SIGKILL until it runs again: without
  // SIGCONT the stop would wait for term_timeout's SIGKILL. The gang owns
  // this, not the shim, because only the gang knows that a signal is a
  // teardown: the shim delivers whatever number it is told, and a number
  // alone does not say it (SIGUSR1 is forwarded as the script's business,
  // or stops the gang when --signals_to_handle lists it); a forwarded
  // signal must leave a stopped worker stopped.
  static void send_stop(Running& slot, int signal_number) {
    slot.signalled = true;
    slot.process->signal(signal_number);
    if (signal_number != SIGKILL) slot.process->signal(SIGCONT);
  }

  // Asks every live worker's supervisor to deliver signal_number to the
  // worker's process group (SIGKILL: to everything under the supervisor).
  void signal_workers(int signal_number, bool marks_stopped) {
    for (Running& slot : running) {
      if (!slot.alive || !slot.process) continue;
      if (marks_stopped) slot.signalled = true;
      slot.process->signal(signal_number);
    }
  }

  void on_all_exited() {
    if (all_exited) return;
    all_exited = true;
    kill_timer.cancel();
    // Whatever is left of each worker's tree (group members that outlived
    // it, descendants that escaped into sessions of their own) is under its
    // supervisor, which kills it all and exits.
    for (Running& slot : running) {
      if (slot.process) slot.process->end_tree();
    }
    if (supervisors_alive == 0) {
      on_supervisors_gone();
      return;
    }
    // A supervisor stuck killing a process in uninterruptible sleep must
    // not hold the run forever.
    kill_timer.expires_after(settings.supervisor_limit);
    kill_timer.async_wait([this](const boost::system::error_code& error) {
      if (error) return;
      for (Running& slot : running) {
        if (slot.supervisor_alive) slot.process->kill_supervisor();
      }
    });
  }

  void on_supervisors_gone() {
    kill_timer.cancel();
    int killed = spawner.kill_strays();
    if (killed > 0) spdlog::debug("killed {} leftover process(es) of the job", killed);
    if (mux->open_streams() == 0) {
      post([this] { finish(); });
      return;
    }
    drain_timer.expires_after(settings.drain_limit);
    drain_timer.async_wait([this, for_attempt = attempt](const boost::system::error_code& error) {
      if (error || !active || for_attempt != attempt) return;
      spdlog::debug("output pipes still open after the workers ended; closing them");
      mux->close_all();
      finish();
    });
  }

  void on_stream_closed() {
    if (all_exited && supervisors_alive == 0 && mux->open_streams() == 0) {
      drain_timer.cancel();
      post([this] { finish(); });
    }
  }

  // ---- requests from the agent ------------------------------------------------

  void stop(int signal_number) {
    if (!active) return;
    if (!outcome.stopped_by_signal) {
      outcome.stopped_by_signal = signal_number;
      if (window_open) shut_failure_window();
      start_teardown(signal_number);  // also stops a spawning in progress
      return;
    }
    if (alive_count == 0) return;
    kill_timer.cancel();
    for (Running& slot : running) {
      if (slot.alive && slot.process) send_stop(slot, settings.second_stop_signal);
    }
  }

  void signal_worker(pid_t pid, int signal_number) {
    for (std::size_t i = 0; i < running.size(); ++i) {
      Running& slot = running[i];
      if (slot.alive && slot.process && outcome.workers[i].pid == pid) {
        slot.process->signal(signal_number);
      }
    }
  }

  void stop_hung() {
    if (!active || tearing_down || window_open) return;
    outcome.stopped_for_hang = true;
    start_teardown(SIGTERM);
  }

  std::vector<Gang::LiveWorker> live_worker_list() const {
    std::vector<Gang::LiveWorker> live;
    for (std::size_t i = 0; i < running.size(); ++i) {
      const WorkerOutcome& worker = outcome.workers[i];
      if (!running[i].alive || worker.pid <= 0) continue;
      live.push_back({.rank = worker.rank,
                      .local_rank = worker.local_rank,
                      .pid = worker.pid,
                      .last_line_at = tails[i].last_line_at()});
    }
    return live;
  }

  std::map<int, double> steps_per_second() const {
    std::map<int, double> rates;
    const auto now = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < running.size(); ++i) {
      const WorkerOutcome& worker = outcome.workers[i];
      if (!running[i].alive || worker.pid <= 0) continue;
      if (std::optional<double> rate = tails[i].steps_per_second(now)) rates[worker.rank] = *rate;
    }
    return rates;
  }

  std::set<pid_t> supervisor_pids() const {
    std::set<pid_t> pids;
    for (const Running& slot : running) {
      if (slot.supervisor_alive) pids.insert(slot.process->supervisor_pid());
    }
    return pids;
  }
};

Gang::Gang(asio::io_context& io, logmux::Console& console, Spawner& spawner, GangSettings settings)
    : impl_(std::make_unique<Impl>(io, console, spawner, std::move(settings))) {}

Gang::~Gang() = default;

void Gang::start(std::vector<WorkerLaunch> workers, DoneHandler on_done) {
  impl_->start(std::move(workers), std::move(on_done));
}

void Gang::stop(int signal_number) { impl_->stop(signal_number); }

void Gang::close_failure_window() { impl_->close_failure_window(); }

void Gang::forward(int signal_number) { impl_->signal_workers(signal_number, false); }

void Gang::stop_hung() { impl_->stop_hung(); }

void Gang::signal_worker(pid_t pid, int signal_number) { impl_->signal_worker(pid, signal_number); }

std::vector<Gang::LiveWorker> Gang::live_worker_list() const { return impl_->live_worker_list(); }
std::map<int, double> Gang::steps_per_second() const { return impl_->steps_per_second(); }

bool Gang::running() const { return impl_->active; }

std::size_t Gang::live_workers() const { return impl_->alive_count; }

std::set<pid_t> Gang::supervisor_pids() const { return impl_->supervisor_pids(); }

}  // namespace gangrun::supervise
