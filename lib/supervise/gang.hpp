// The gang supervisor: runs one attempt of the local workers as a unit.
// Single-threaded: everything happens in handlers on the io_context, which
// must be driven only by Gang::run while an attempt is running.
#pragma once

#include "logmux/console.hpp"
#include "logmux/output_mux.hpp"
#include "supervise/exit_status.hpp"
#include "supervise/process.hpp"

#include <boost/asio/io_context.hpp>

#include <sys/types.h>

#include <chrono>
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
};

struct WorkerOutcome {
  int rank = 0;
  int local_rank = 0;
  pid_t pid = -1;  // -1 if it never started (spawn_error says why)
  ExitStatus status;
  std::chrono::system_clock::time_point started_at;
  std::chrono::system_clock::time_point ended_at;
  long peak_rss_kib = 0;                   // ru_maxrss from wait4
  bool stopped_by_gangrun = false;         // it ended after gangrun had asked it to stop
  std::vector<std::string> last_lines;     // the tail of its captured output
  std::optional<std::string> spawn_error;  // it was started but could not run
  bool started = true;                     // false: the gang was stopping before its turn came
};

struct AttemptOutcome {
  std::vector<WorkerOutcome> workers;     // in launch order
  std::optional<std::size_t> root_cause;  // index of the first worker that failed
  std::optional<int> stopped_by_signal;   // gangrun was told to stop by this signal
  // Milliseconds from the root cause's exit to the stop request reaching the
  // last other worker's shim; nullopt if there was no teardown.
  std::optional<double> teardown_latency_ms;
  // Log files that lost bytes (a full disk); their console copy is complete.
  std::vector<std::string> incomplete_logs;
  bool succeeded() const { return !root_cause && !stopped_by_signal; }
};

struct GangSettings {
  std::chrono::milliseconds term_timeout{30000};  // stop signal to SIGKILL
  std::set<int> teardown_signals;                 // forwarded, then the gang is torn down
};

class Gang {
 public:
  // console outlives the Gang. Installs gangrun's signal handlers (through
  // Asio) for the Gang's lifetime; a teardown signal that arrives between
  // attempts is remembered and ends the next attempt before it starts.
  Gang(boost::asio::io_context& io, logmux::Console& console, GangSettings settings);
  ~Gang();
  Gang(const Gang&) = delete;
  Gang& operator=(const Gang&) = delete;

  // Starts the workers one per turn of the loop (so a failure or a teardown
  // signal stops the spawning at once; the rest are reported as not
  // started), supervises them until all have exited, tears the gang down on
  // the first failure or on a teardown signal (stop signal to every worker's
  // group, SIGKILL after term_timeout, a second teardown signal kills at
  // once), then has every worker's shim kill what is left of its tree,
  // drains their output, and returns. USR1/USR2 are forwarded without
  // teardown; TSTP stops the workers and gangrun, CONT resumes them.
  //
  // Every signal reaches a worker through its shim (supervise/shim.hpp),
  // which alone may reap it: gangrun never signals a pid that may have been
  // reused. Never throws; a worker that cannot be started is the root cause.
  AttemptOutcome run(std::vector<WorkerLaunch> workers);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gangrun::supervise
