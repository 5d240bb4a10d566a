#include "agent/attempt_record.hpp"

#include "report/error_file.hpp"
#include "report/failure_summary.hpp"
#include "report/interpreter.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <optional>

namespace gangrun::agent {

report::AttemptRecord to_record(const supervise::AttemptOutcome& outcome, int attempt,
                                const launch::RunDirectory& run_dir) {
  report::AttemptRecord record;
  record.attempt = attempt;
  record.root_cause = outcome.root_cause;
  record.first_failure = outcome.first_failure;
  if (outcome.blame) record.blame = report::describe(*outcome.blame);
  record.stopped_by_signal = outcome.stopped_by_signal;
  record.teardown_latency_ms = outcome.teardown_latency_ms;
  record.incomplete_logs = outcome.incomplete_logs;
  for (std::size_t i = 0; i < outcome.workers.size(); ++i) {
    const supervise::WorkerOutcome& worker = outcome.workers[i];
    report::WorkerRecord entry;
    entry.rank = worker.rank;
    entry.local_rank = worker.local_rank;
    entry.pid = worker.pid;
    if (!worker.started) {
      // Neither an exit code nor a signal: it never ran.
    } else if (worker.status.kind == supervise::ExitStatus::Kind::signaled) {
      entry.signal = worker.status.signal;
    } else {
      entry.exit_code = worker.status.code;
    }
    entry.shell_code = worker.status.shell_code();
    entry.started_at = worker.started_at;
    entry.ended_at = worker.ended_at;
    entry.peak_rss_kib = worker.peak_rss_kib;
    entry.stopped_by_gangrun = worker.stopped_by_gangrun;
    entry.last_lines = worker.last_lines;
    std::string error_file =
        launch::RunDirectory::error_file(run_dir.path(), attempt, worker.local_rank);
    if (outcome.root_cause == i || outcome.first_failure == i) {
      auto read = report::read_worker_error(error_file);
      if (read) {
        entry.error = std::move(*read);
      } else {
        spdlog::warn("{}", read.error().describe());
      }
    }
    if (!run_dir.temporary()) entry.error_file = std::move(error_file);
    if (worker.spawn_error) entry.spawn_error = worker.spawn_error->describe();
    record.workers.push_back(std::move(entry));
  }
  // A failed attempt lists them in its failure summary; any other says so here.
  if (!record.root_cause) {
    if (auto note = report::incomplete_logs_note(record)) spdlog::warn("{}", *note);
  }
  return record;
}

namespace {

// The first 1 MiB of a script: imports are at its top.
std::optional<std::string> read_script_head(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::string text(1 << 20, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(file.gcount()));
  return text;
}

}  // namespace

std::vector<std::string> packages_to_probe(const launch::LaunchPlan& plan,
                                           const report::AttemptRecord& attempt) {
  if (!attempt.first_failure || !plan.program.interpreter) return {};
  const report::WorkerRecord& root = attempt.workers.at(*attempt.first_failure);
  if (!root.last_lines.empty() || root.spawn_error || root.exit_code != 1) return {};
  auto script = read_script_head(plan.program.entrypoint);
  if (!script) return {};
  return report::launcher_packages_imported(*script);
}

void report_failure(const launch::LaunchPlan& plan, const report::RunRecord& run,
                    const report::AttemptRecord& attempt) {
  std::string summary =
      report::format_failure(run, attempt, attempt.workers.at(*attempt.root_cause).error);
  std::fflush(stdout);
  std::fputs(summary.c_str(), stderr);
  // The error a parent launcher reads is the first failure's: its code is
  // the attempt's.
  const report::WorkerRecord& first =
      attempt.workers.at(attempt.first_failure.value_or(*attempt.root_cause));
  if (plan.parent_error_file && first.error) {
    auto written =
        report::write_parent_error(*plan.parent_error_file, *first.error, first.shell_code);
    if (!written) spdlog::warn("{}", written.error().describe());
  }
}

}  // namespace gangrun::agent
