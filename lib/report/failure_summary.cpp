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

namespace {

void append_last_output(std::string& out, const WorkerRecord& worker) {
  if (worker.last_lines.empty()) return;
  out += "  last output:\n";
  for (const std::string& line : worker.last_lines) out += "    " + line + "\n";
}

void append_exit_and_time(std::string& out, const WorkerRecord& worker) {
  out += fmt::format("  exit:       {}\n", describe_end(worker));
  out += fmt::format("  time:       {} (after {:.3f} s)\n", format_time(worker.ended_at),
                     seconds_between(worker.started_at, worker.ended_at));
}

// The error a worker wrote to its error file, and what it wrote last.
void append_error_and_output(std::string& out, const WorkerRecord& worker,
                             const std::optional<WorkerError>& error) {
  if (error) {
    out += fmt::format("  error:      {}\n", error->message);
    if (error->traceback) {
      out += "  traceback:\n";
      append_indented(out, *error->traceback, "    ");
    }
  } else if (!worker.spawn_error) {
    out +=
        "  error:      not recorded (a Python entry point decorated with torch.distributed."
        "elastic.multiprocessing.errors.record reports its exception here)\n";
  }
  append_last_output(out, worker);
}

}  // namespace

std::string format_failure(const RunRecord& run, const AttemptRecord& attempt,
                           const std::optional<WorkerError>& root_error) {
  const WorkerRecord& root = attempt.workers.at(*attempt.root_cause);
  std::optional<std::size_t> first = attempt.first_failure;
  bool blamed = attempt.blame && first && *first != *attempt.root_cause;
  std::string out;
  out += fmt::format("{}\n{} FAILED (attempt {})\n", k_rule, run.entrypoint, attempt.attempt);
  if (blamed) {
    out += *attempt.blame + "\n";
    out += "Root cause (the rank the failed ranks waited for):\n";
  } else {
    out += "Root cause (first observed failure):\n";
  }
  out += fmt::format("  rank:       {} (local_rank: {})\n", root.rank, root.local_rank);
  if (run.node) {
    out += fmt::format("  node:       {}\n", *run.node);
  } else {
    out += fmt::format("  host:       {}\n", run.host);
  }
  out += fmt::format("  pid:        {}\n", root.pid);
  if (!blamed) {
    append_exit_and_time(out, root);
  } else if (root.stopped_by_gangrun) {
    out += fmt::format("  state:      still running when the others failed; then {}\n",
                       describe_worker_end(root, attempt));
  } else {
    out += fmt::format("  state:      ended before any other failed: {}\n",
                       describe_worker_end(root, attempt));
  }
  if (run.interpreter && !root.spawn_error) {
    out += fmt::format("  python:     {} (chosen by {})\n", run.interpreter->path,
                       run.interpreter->origin);
  }
  const WorkerRecord& failed = blamed ? attempt.workers.at(*first) : root;
  if (blamed) {
    append_last_output(out, root);
    out += "First failure (the job exits with its code):\n";
    out += fmt::format("  rank:       {} (local_rank: {}, pid {})\n", failed.rank,
                       failed.local_rank, failed.pid);
    append_exit_and_time(out, failed);
    append_error_and_output(out, failed, failed.error);
  } else {
    append_error_and_output(out, root, root_error);
  }
  if (run.interpreter) {
    auto module = missing_launcher_module(failed.last_lines, blamed ? failed.error : root_error);
    if (!module) module = failed.unimportable_module;
    if (module) {
      out += fmt::format("  hint:       {}\n", interpreter_hint(*run.interpreter, *module));
    }
  }
  out += "Other workers:\n";
  bool any_other = false;
  for (std::size_t i = 0; i < attempt.workers.size(); ++i) {
    if (i == *attempt.root_cause || (blamed && i == *first)) continue;
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
