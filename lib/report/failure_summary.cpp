#include "report/failure_summary.hpp"

#include "report/interpreter.hpp"
#include "report/worker_end.hpp"
#include "util/signals.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

namespace gangrun::report {
namespace {

constexpr std::string_view k_rule = "============================================================";

std::string describe_end(const WorkerRecord& worker) {
  if (worker.spawn_error) return "could not start: " + *worker.spawn_error;
  if (worker.signal) {
    return fmt::format("killed by signal {} ({})", *worker.signal, signals::name(*worker.signal));
  }
  return fmt::format("exit code {}", worker.exit_code.value_or(-1));
}

double seconds_between(TimePoint from, TimePoint to) {
  return std::chrono::duration<double>(to - from).count();
}

void append_indented(std::string& out, std::string_view text, std::string_view indent) {
  for (const std::string& line : strings::split(text, '\n')) {
    if (line.empty()) continue;
    out += indent;
    out += line;
    out += '\n';
  }
}

}  // namespace

std::optional<std::string> incomplete_logs_note(const AttemptRecord& attempt) {
  if (attempt.incomplete_logs.empty()) return std::nullopt;
  return "some log files are incomplete (a write failed): " +
         strings::join(attempt.incomplete_logs, ", ");
}

std::string format_failure(const RunRecord& run, const AttemptRecord& attempt,
                           const std::optional<WorkerError>& root_error) {
  const WorkerRecord& root = attempt.workers.at(*attempt.root_cause);
  std::string out;
  out += fmt::format("{}\n{} FAILED (attempt {})\n", k_rule, run.entrypoint, attempt.attempt);
  out += "Root cause (first observed failure):\n";
  out += fmt::format("  rank:       {} (local_rank: {})\n", root.rank, root.local_rank);
  out += fmt::format("  host:       {}\n", run.host);
  out += fmt::format("  pid:        {}\n", root.pid);
  out += fmt::format("  exit:       {}\n", describe_end(root));
  out += fmt::format("  time:       {} (after {:.3f} s)\n", format_time(root.ended_at),
                     seconds_between(root.started_at, root.ended_at));
  if (run.interpreter && !root.spawn_error) {
    out += fmt::format("  python:     {} (chosen by {})\n", run.interpreter->path,
                       run.interpreter->origin);
  }
  if (root_error) {
    out += fmt::format("  error:      {}\n", root_error->message);
    if (root_error->traceback) {
      out += "  traceback:\n";
      append_indented(out, *root_error->traceback, "    ");
    }
  } else if (!root.spawn_error) {
    out +=
        "  error:      not recorded (a Python entry point decorated with torch.distributed."
        "elastic.multiprocessing.errors.record reports its exception here)\n";
  }
  if (!root.last_lines.empty()) {
    out += "  last output:\n";
    for (const std::string& line : root.last_lines) out += "    " + line + "\n";
  }
  if (run.interpreter) {
    auto module = missing_launcher_module(root.last_lines, root_error);
    if (!module) module = root.unimportable_module;
    if (module) {
      out += fmt::format("  hint:       {}\n", interpreter_hint(*run.interpreter, *module));
    }
  }
  out += "Other workers:\n";
  bool any_other = false;
  for (std::size_t i = 0; i < attempt.workers.size(); ++i) {
    if (i == *attempt.root_cause) continue;
    const WorkerRecord& worker = attempt.workers[i];
    any_other = true;
    std::string how = describe_worker_end(worker, attempt);
    if (worker.succeeded() && !worker.stopped_by_gangrun && worker.pid >= 0) {
      how = "finished successfully";
    } else if (!worker.stopped_by_gangrun && worker.pid >= 0 && !worker.spawn_error) {
      how = "failed on its own (" + how + ")";
    }
    out += fmt::format("  rank {} (local_rank {}, pid {}): {}\n", worker.rank, worker.local_rank,
                       worker.pid, how);
  }
  if (!any_other) out += "  <none>\n";
  if (auto note = incomplete_logs_note(attempt)) out += *note + "\n";
  if (run.log_dir) out += fmt::format("Logs of this run: {}\n", *run.log_dir);
  out += k_rule;
  out += '\n';
  return out;
}

}  // namespace gangrun::report
