#include "report/worker_end.hpp"

#include "util/signals.hpp"

#include <fmt/format.h>

#include <csignal>

namespace gangrun::report {

int stop_signal(const AttemptRecord& attempt) {
  return attempt.stopped_by_signal.value_or(SIGTERM);
}

std::string describe_worker_end(const WorkerRecord& worker, const AttemptRecord& attempt) {
  if (worker.spawn_error) return "could not start: " + *worker.spawn_error;
  if (worker.pid < 0) return "not started (the gang was stopping before its turn)";
  if (!worker.stopped_by_gangrun) {
    if (worker.signal) return "killed by " + signals::name(*worker.signal);
    return fmt::format("exited with {}", worker.exit_code.value_or(-1));
  }
  const std::string sent = signals::name(stop_signal(attempt));
  if (worker.signal && *worker.signal == stop_signal(attempt)) {
    return "stopped by gangrun (" + sent + ")";
  }
  if (worker.signal && *worker.signal == SIGKILL) {
    // A second stop signal to gangrun also ends in SIGKILL, before the timeout.
    if (attempt.stopped_by_signal) return "killed by gangrun's SIGKILL (it outlived " + sent + ")";
    return "killed by SIGKILL after --term-timeout (it outlived gangrun's " + sent + ")";
  }
  if (worker.signal)
    return "killed by " + signals::name(*worker.signal) + " after gangrun's " + sent;
  return fmt::format("exited with {} after gangrun's {}", worker.exit_code.value_or(-1), sent);
}

}  // namespace gangrun::report
