// The gang supervisor: one attempt of a set of processes as a unit, the
// node agent's workers or the tools that start gangrun on other nodes
// (remote/tool_start.hpp: srun, ssh). Single-threaded: everything happens in
// handlers on its owner's io_context. Every signal reaches a worker through
// its supervisor (the shim, supervise/shim.hpp), which alone may reap it:
// gangrun never signals a pid that may have been reused.
#pragma once

#include "logmux/console.hpp"
#include "logmux/output_mux.hpp"
#include "report/blame.hpp"
#include "supervise/exit_status.hpp"
#include "supervise/process.hpp"
#include "supervise/spawner.hpp"
#include "util/error.hpp"

#include <boost/asio/io_context.hpp>

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gangrun::supervise {

struct WorkerLaunch {
  int rank = 0;
  int local_rank = 0;
  SpawnSpec spawn;  // stdio descriptors are filled in by Gang from the routes
  // nullopt: the worker inherits gangrun's own stdout/stderr untouched.
  std::optional<logmux::StreamRoute> stdout_route;
  std::optional<logmux::StreamRoute> stderr_route;
  // Set: the worker's stdin is a pipe the gang holds and never writes after
  // this first line (written with a newline unless empty), and a teardown
  // first asks the worker to stop by closing it, not by a signal (ssh, which
  // passes no signal on without a terminal). nullopt: spawn.stdin_fd.
  std::optional<std::string> stdin_first_line;
  // How messages name it; empty: "rank N".
  std::string name;
};

struct WorkerOutcome {
  int rank = 0;
  int local_rank = 0;
  pid_t pid = -1;  // -1 if it never started (spawn_error says why)
  ExitStatus status;
  std::chrono::system_clock::time_point started_at;
  std::chrono::system_clock::time_point ended_at;
  long peak_rss_kib = 0;                // ru_maxrss from wait4
  bool stopped_by_gangrun = false;      // it ended after gangrun had asked it to stop
  std::vector<std::string> last_lines;  // the tail of its captured output
  std::optional<Error> spawn_error;     // it was started but could not run
  bool started = true;                  // false: the gang was stopping before its turn came
};

struct AttemptOutcome {
  std::vector<WorkerOutcome> workers;  // in launch order
  std::vector<std::size_t> end_order;  // indices of the workers, in the order their ends were seen
  // Index of the worker the failure is blamed on: the one the failed ranks
  // were waiting for (blame), else the first that failed.
  std::optional<std::size_t> root_cause;
  // Index of the first worker that failed: its code is the attempt's code.
  std::optional<std::size_t> first_failure;
  // Set when the failed workers were waiting for others (report/blame.hpp).
  std::optional<report::Blame> blame;
  std::optional<int> stopped_by_signal;  // gangrun was told to stop by this signal
  // The hang watch ended the attempt (stop_hung): no rank made progress.
  bool stopped_for_hang = false;
  // Milliseconds from the root cause's exit to the stop request reaching the
  // last other worker's shim; nullopt if there was no teardown.
  std::optional<double> teardown_latency_ms;
  // Log files that lost bytes (a full disk); their console copy is complete.
  std::vector<std::string> incomplete_logs;
  bool succeeded() const { return !root_cause && !stopped_by_signal && !stopped_for_hang; }
};

struct GangSettings {
  // From the stop signal to SIGKILL; nullopt: never killed (the tools that
  // stop a job on other nodes, which must be left to finish that).
  std::optional<std::chrono::milliseconds> term_timeout{std::chrono::milliseconds(30000)};
  // What a second stop() sends to the workers still running: SIGKILL kills
  // them at once; the tools get SIGTERM (srun passes it on; ssh, first asked
  // to stop by closing its stdin, then hears a signal).
  int second_stop_signal = SIGKILL;
  // After the last worker ended, each supervisor is asked to end what is
  // left of its tree; one still there after this long is killed.
  std::chrono::milliseconds supervisor_limit{5000};
  // Output still buffered in the pipes is drained after the last worker
  // ended; a pipe some unkillable process still holds open is cut off after
  // this long.
  std::chrono::milliseconds drain_limit{2000};
  // After the first failure, how long the other workers may go on and end
  // by themselves before they are stopped: a collective that timed out
  // fails on every rank that reached it within moments, and the rank still
  // running then is the one they waited for (report/blame.hpp). The window
  // closes early when every worker has ended. 0: stop them at once;
  // k_until_all_ended: never stop them for a failure.
  std::chrono::milliseconds failure_window{0};
  // Called each time a worker fails by itself, from the first failure until
  // the teardown begins, with the outcome so far (root_cause not yet
  // decided): on many nodes the agent tells the coordinator at once. Not
  // for a stop().
  std::function<void(const AttemptOutcome& so_far)> on_failure;
};

// GangSettings::failure_window: the others run until they end by themselves.
inline constexpr std::chrono::milliseconds k_until_all_ended = std::chrono::milliseconds::max();

// One attempt of the local workers, supervised as a unit: a component of
// the node agent (agent/node_agent.hpp), with no loop of its own. Every
// handler runs on the io_context given to the constructor, which its owner
// drives; the Gang never blocks it.
class Gang {
 public:
  using DoneHandler = std::function<void(AttemptOutcome)>;

  // console, spawner and the io_context outlive the Gang.
  Gang(boost::asio::io_context& io, logmux::Console& console, Spawner& spawner,
       GangSettings settings);
  ~Gang();
  Gang(const Gang&) = delete;
  Gang& operator=(const Gang&) = delete;

  // Starts an attempt and returns at once. The workers start one per turn
  // of the loop (so a failure or a stop() ends the spawning at once; the
  // rest are reported as not started). When a worker fails, the others
  // may end by themselves for failure_window; then the root cause is
  // decided (the rank they waited for, else the first failure) and the
  // rest are asked to stop (SIGTERM to their groups, or their stdin closed),
  // SIGKILL after term_timeout; every stop signal of a teardown is followed
  // by SIGCONT, so that a worker stopped from outside acts on it. When every
  // worker has ended, each supervisor kills what is left of its tree, the
  // output is drained, and on_done gets the outcome (from a handler, never
  // inside start). Only when no attempt is running. A worker that cannot be
  // started is the root cause.
  void start(std::vector<WorkerLaunch> workers, DoneHandler on_done);

  // Tears the running attempt down because gangrun was told to stop by
  // signal_number: the signal goes to every worker's group (or its stdin is
  // closed, stdin_first_line), SIGKILL follows after term_timeout, and the
  // outcome says stopped_by_signal. Called again while a teardown is under
  // way, it sends second_stop_signal to every worker at once.
  void stop(int signal_number);

  // Tears the running attempt down because it hung (the agent's hang watch
  // decided): SIGTERM to every worker, SIGKILL after term_timeout, and the
  // outcome says stopped_for_hang. Does nothing while a failure or a stop
  // is already being handled: that one decides the attempt.
  void stop_hung();

  // Closes the failure window now (the coordinator decided for every
  // node): the root cause is decided and the rest are stopped. Does
  // nothing when no window is open.
  void close_failure_window();

  // Delivers signal_number to every live worker's group without a
  // teardown (USR1, USR2, SIGSTOP, SIGCONT), and nothing after it: a
  // stopped worker stays stopped.
  void forward(int signal_number);

  // Delivers signal_number to the group of the one live worker whose
  // program runs as pid (nothing when none does), without a teardown: its
  // end is its own, a failure like any other (the file timer of
  // doctor/watch/file_timers.hpp kills a rank whose timer expired this way).
  void signal_worker(pid_t pid, int signal_number);

  bool running() const;
  // Workers started and not yet seen to end.
  std::size_t live_workers() const;
  // A worker of the running attempt that has not been seen to end, and when
  // it last printed a line (nullopt: never, or its output is not read).
  struct LiveWorker {
    int rank = 0;
    int local_rank = 0;
    pid_t pid = -1;  // the worker's program (not its supervisor)
    std::optional<std::chrono::steady_clock::time_point> last_line_at;
  };
  std::vector<LiveWorker> live_worker_list() const;
  // The steps a second each live worker's lines show (logmux/step_rate.hpp),
  // by rank; a worker whose lines show none is left out. Apart from
  // live_worker_list, which the doctor's watches ask for many times a
  // second: only the node's snapshot needs the rates.
  std::map<int, double> steps_per_second() const;

  // gangrun's own children that belong to this attempt (the supervisors),
  // which stray reaping must leave alone.
  std::set<pid_t> supervisor_pids() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gangrun::supervise
