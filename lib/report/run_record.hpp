// What happened in a run, as plain data for the failure summary and the
// JSON report. launch/ fills it from the supervisor's outcomes.
#pragma once

#include "report/error_file.hpp"
#include "report/interpreter.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::report {

using TimePoint = std::chrono::system_clock::time_point;

struct WorkerRecord {
  int rank = 0;
  int local_rank = 0;
  long pid = -1;
  std::optional<int> exit_code;  // set when it exited
  std::optional<int> signal;     // set when a signal killed it
  int shell_code = 0;            // exit_code, or 128 + signal
  TimePoint started_at;
  TimePoint ended_at;
  long peak_rss_kib = 0;
  // gangrun had signalled it (a teardown) before it ended; how it then ended
  // is exit_code or signal (worker_end.hpp puts the two together).
  bool stopped_by_gangrun = false;
  std::vector<std::string> last_lines;
  // TORCHELASTIC_ERROR_FILE given to the worker, when it outlives gangrun
  // (--log_dir); nullopt when the run directory was a temporary one, which
  // is deleted when gangrun ends.
  std::optional<std::string> error_file;
  // What the worker wrote to its error file (torch's @record), read once when
  // the attempt ended; filled for the root cause and the first failure only.
  std::optional<WorkerError> error;
  std::optional<std::string> spawn_error;  // why it never started
  // A launcher package its script imports that its interpreter cannot find,
  // asked of the interpreter after it failed with no output captured (its
  // streams went to the terminal); root cause only (agent/attempt_record.hpp).
  std::optional<std::string> unimportable_module;

  bool succeeded() const { return exit_code && *exit_code == 0; }
};

// A hang the watch reported: no rank made progress for --hang-timeout.
struct HangFinding {
  double timeout_s = 0;     // --hang-timeout
  double silent_for_s = 0;  // how long no rank had made progress
  // --on-hang's action as taken ("report", "stop", "restart"), or "none"
  // when the round ended (a signal, a failure) before it could act.
  std::string action;
  // The ranks read that had no connection to the round's store; nullopt
  // when that is not known.
  std::optional<std::vector<int>> not_at_store;
  // The ranks read that were stopped from outside (SIGSTOP, a debugger):
  // the others wait for them.
  std::vector<int> stopped;
  nlohmann::json stacks;  // every rank's, as doctor/stacks_json.hpp writes them
  // The NCCL flight recorder's dumps, when some were asked for before acting.
  std::optional<std::vector<std::string>> flight_recorder_dumps;
  TimePoint reported_at;  // when the stacks were read and the hang told
};

// A rank whose torch.distributed.elastic.timer expired.
struct TimerExpiredFinding {
  int rank = 0;
  long pid = 0;
  std::string scope_id;
  int signal = 0;  // what it was killed with; 0: not killed
  // Every rank's stack, read before it was killed; nullopt when a reading
  // was already under way.
  std::optional<nlohmann::json> stacks;
};

// A round still starting --start-timeout after it began: some ranks had
// neither printed a line nor connected to the round's store (importing,
// loading, waiting to rendezvous). Not a hang: --hang-timeout counts only
// once every rank has started (doctor/watch/start_watch.hpp).
struct StartTimeoutFinding {
  double timeout_s = 0;        // --start-timeout
  std::string action;          // as HangFinding's
  std::vector<int> starting;   // the ranks still starting
  std::vector<int> importing;  // of those, the ones whose main thread was in an import
  nlohmann::json stacks;       // every rank's, as doctor/stacks_json.hpp writes them
};

// Ranks not at the store --arrival-timeout after the first rank was, while
// others were.
struct LateToStoreFinding {
  double after_s = 0;  // --arrival-timeout
  std::string host;
  std::string store;  // "host:port"
  std::vector<int> ranks;
};

// What the gang doctor found in an attempt (doctor/watch/gang_doctor.hpp),
// each watch its own part; run_report.cpp writes it into the attempt's
// JSON, under one key per finding.
struct DoctorFindings {
  std::optional<HangFinding> hang;
  std::optional<StartTimeoutFinding> start_timeout;
  // The survivors' stacks read when a rank failed (doctor/stacks_json.hpp).
  std::optional<nlohmann::json> stacks_at_failure;
  std::optional<TimerExpiredFinding> timer_expired;
  std::optional<LateToStoreFinding> late_to_store;
  // What --straggler-watch sampled: every rank's share of samples spent
  // waiting on the others, and the ranks it named (doctor/straggler.hpp).
  std::optional<nlohmann::json> straggler_watch;
  // The NCCL flight recorder's dumps of this attempt (--flight-recorder).
  std::vector<std::string> flight_recorder_dumps;
};

struct AttemptRecord {
  int attempt = 0;  // TORCHELASTIC_RESTART_COUNT of this attempt
  std::vector<WorkerRecord> workers;
  // Index into workers of the worker the failure is blamed on: the one the
  // failed workers waited for (blame says so), else the first failure.
  std::optional<std::size_t> root_cause;
  // Index of the first worker that failed: its code is the attempt's code.
  std::optional<std::size_t> first_failure;
  // "rank 2 never reached the collective; ranks 0, 1, 3 timed out waiting"
  // (report/blame.hpp) when the failure is blamed on a rank that did not
  // fail first; on many nodes, as the coordinator said it for the job.
  std::optional<std::string> blame;
  std::optional<int> stopped_by_signal;
  std::optional<double> teardown_latency_ms;
  // Log files whose writes failed (a full disk, an I/O error): what they
  // hold stops where the failure happened.
  std::vector<std::string> incomplete_logs;
  DoctorFindings doctor;  // what the gang doctor found
};

struct RunRecord {
  std::string run_id;
  std::string host;
  // On many nodes, this node as every message names it (node_name.hpp), for
  // the failure summary: its host name alone may be every node's.
  std::optional<std::string> node;
  std::string entrypoint;  // the program as the user named it
  // The Python interpreter every worker ran, when gangrun knows it (it chose
  // it, or read it from the program's #! line); nullopt for other programs.
  std::optional<Interpreter> interpreter;
  nlohmann::json plan;  // the launch plan, as --dry-run --json prints it
  TimePoint started_at;
  TimePoint ended_at;
  std::vector<AttemptRecord> attempts;
  int exit_code = 0;
  std::optional<int> gangrun_signal;   // gangrun itself was stopped by this signal
  std::optional<std::string> log_dir;  // this run's own directory in --log_dir, if given
  // A multi-node run: the whole job's outcome, the same on every node
  // (exit_code, message, root_cause_node, this_node_had_root_cause).
  std::optional<nlohmann::json> job;
};

// "2026-11-22T10:15:03.123Z"-style UTC time for reports.
std::string format_time(TimePoint time);

}  // namespace gangrun::report
