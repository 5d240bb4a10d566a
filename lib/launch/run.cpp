#include "launch/run.hpp"

#include "launch/agent_store.hpp"
#include "launch/dry_run.hpp"
#include "launch/files.hpp"
#include "launch/logging.hpp"
#include "logmux/console.hpp"
#include "report/error_file.hpp"
#include "report/failure_summary.hpp"
#include "report/run_report.hpp"
#include "supervise/gang.hpp"
#include "util/exit_codes.hpp"
#include "util/signals.hpp"

#include <boost/asio/io_context.hpp>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>

namespace gangrun::launch {
namespace {

logmux::StreamRoute route_for(const LaunchPlan& plan, const WorkerPlan& worker, bool is_err,
                              const std::string& dir) {
  logmux::StreamRoute route;
  route.to_console = is_err ? worker.to_console.err : worker.to_console.out;
  route.console_is_err = is_err;
  route.prefix = plan.prefix_output ? worker.prefix : "";
  if (is_err ? worker.to_file.err : worker.to_file.out) {
    route.file_path = dir + (is_err ? "/stderr.log" : "/stdout.log");
  }
  return route;
}

// In inherit mode a stream needs a pipe only when gangrun must see it (a log
// file, a tee, or hiding it from the console).
bool needs_pipe(const LaunchPlan& plan, const logmux::StreamRoute& route) {
  return plan.prefix_output || route.file_path || !route.to_console;
}

std::vector<supervise::WorkerLaunch> make_launches(const LaunchPlan& plan, int attempt,
                                                   const std::string& run_dir,
                                                   const std::string& master_port) {
  std::vector<supervise::WorkerLaunch> launches;
  for (const WorkerPlan& worker : plan.workers) {
    supervise::WorkerLaunch launch;
    launch.rank = worker.rank;
    launch.local_rank = worker.local_rank;
    launch.spawn.executable = plan.program.executable;
    launch.spawn.argv = worker.argv;
    launch.spawn.env = plan.host_env;
    for (auto& [name, value] : worker_variables(plan, worker, attempt, run_dir, master_port)) {
      launch.spawn.env[name] = value;
    }
    std::string dir = worker_dir(run_dir, attempt, worker.local_rank);
    logmux::StreamRoute out = route_for(plan, worker, false, dir);
    logmux::StreamRoute err = route_for(plan, worker, true, dir);
    if (needs_pipe(plan, out)) launch.stdout_route = out;
    if (needs_pipe(plan, err)) launch.stderr_route = err;
    launches.push_back(std::move(launch));
  }
  return launches;
}

// Reads the root cause's error file now, while it exists: a temporary run
// directory is deleted when gangrun ends, so its paths are left out of the
// record and what the file said is kept instead.
report::AttemptRecord to_record(const supervise::AttemptOutcome& outcome, int attempt,
                                const RunDirectory& run_dir) {
  report::AttemptRecord record;
  record.attempt = attempt;
  record.root_cause = outcome.root_cause;
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
    std::string error_file = worker_dir(run_dir.path(), attempt, worker.local_rank) + "/error.json";
    if (outcome.root_cause == i) {
      auto read = report::read_worker_error(error_file);
      if (read) {
        entry.error = std::move(*read);
      } else {
        spdlog::warn("{}", read.error().describe());
      }
    }
    if (!run_dir.temporary()) entry.error_file = std::move(error_file);
    entry.spawn_error = worker.spawn_error;
    record.workers.push_back(std::move(entry));
  }
  // A failed attempt lists them in its failure summary; any other says so here.
  if (!record.root_cause) {
    if (auto note = report::incomplete_logs_note(record)) spdlog::warn("{}", *note);
  }
  return record;
}

void report_failure(const LaunchPlan& plan, const report::RunRecord& run,
                    const report::AttemptRecord& attempt) {
  const report::WorkerRecord& root = attempt.workers.at(*attempt.root_cause);
  std::string summary = report::format_failure(run, attempt, root.error);
  std::fflush(stdout);
  std::fputs(summary.c_str(), stderr);
  if (plan.parent_error_file && root.error) {
    auto written =
        report::write_parent_error(*plan.parent_error_file, *root.error, root.shell_code);
    if (!written) spdlog::warn("{}", written.error().describe());
  }
}

}  // namespace

RunResult run(const LaunchPlan& plan) {
  // A closed stdout must not kill the supervisor in the middle of a teardown.
  std::signal(SIGPIPE, SIG_IGN);
  supervise::use_hard_open_file_limit();
  if (auto subreaper = supervise::become_subreaper(); !subreaper) {
    spdlog::warn("{}; descendants that escape their worker cannot be cleaned up",
                 subreaper.error().describe());
  }

  boost::asio::io_context io;
  // Node 0 hosts the store every worker meets through, inside this event
  // loop, from before the first worker starts until after the last one ends.
  std::unique_ptr<store::Server> agent_store;
  std::string master_port = plan.master_port ? std::to_string(*plan.master_port) : "";
  if (plan.node_rank == 0) {
    auto started = start_agent_store(io, plan);
    if (!started) {
      spdlog::error("{}", started.error().describe());
      return {started.error().exit_code(), std::nullopt};
    }
    agent_store = std::move(*started);
    master_port = std::to_string(agent_store->port());
  }

  auto run_dir = RunDirectory::create(
      plan.log_dir, env_lookup(plan.host_env, "TMPDIR").value_or("/tmp"), plan.run_id);
  if (!run_dir) {
    spdlog::error("{}", run_dir.error().describe());
    return {run_dir.error().exit_code(), std::nullopt};
  }
  if (!run_dir->temporary()) spdlog::info("logs of this run: {}", run_dir->path());

  report::RunRecord record;
  record.run_id = plan.run_id;
  record.host = plan.host;
  record.entrypoint = plan.program.entrypoint;
  record.plan = plan_to_json(plan);
  record.started_at = std::chrono::system_clock::now();
  if (!run_dir->temporary()) record.log_dir = run_dir->path();

  logmux::Console console;
  LoggingThroughConsole logging_through_console(console);
  supervise::Gang gang(
      io, console,
      {std::chrono::milliseconds(static_cast<long>(plan.options.term_timeout * 1000)),
       plan.teardown_signals});

  for (int attempt = 0; attempt <= plan.options.max_restarts; ++attempt) {
    // Keys of one attempt must not leak into the next: 1.13 workers prefix
    // their keys with the attempt, newer ones do not. Every worker of the
    // last attempt is gone, so nobody loses a connection it still needs.
    if (attempt > 0 && agent_store) agent_store->reset();
    if (auto prepared = run_dir->prepare_attempt(attempt, plan.local_world_size); !prepared) {
      spdlog::error("{}", prepared.error().describe());
      return {prepared.error().exit_code(), std::nullopt};
    }
    supervise::AttemptOutcome outcome =
        gang.run(make_launches(plan, attempt, run_dir->path(), master_port));
    record.attempts.push_back(to_record(outcome, attempt, *run_dir));
    if (outcome.succeeded() || outcome.stopped_by_signal) break;
    if (attempt < plan.options.max_restarts) {
      const supervise::WorkerOutcome& root = outcome.workers.at(*outcome.root_cause);
      spdlog::warn("rank {} failed ({}); restarting the gang ({} of {} restarts)", root.rank,
                   root.status.describe(), attempt + 1, plan.options.max_restarts);
    }
  }

  const report::AttemptRecord& last = record.attempts.back();
  RunResult result;
  if (last.stopped_by_signal) {
    result.die_by_signal = last.stopped_by_signal;
    result.exit_code = exit_codes::for_signal(*last.stopped_by_signal);
    record.gangrun_signal = last.stopped_by_signal;
  } else if (last.root_cause) {
    result.exit_code = last.workers.at(*last.root_cause).shell_code;
  }
  record.exit_code = result.exit_code;
  record.ended_at = std::chrono::system_clock::now();

  // The summary comes after every line the workers wrote.
  logging_through_console.end();
  if (last.root_cause) report_failure(plan, record, last);
  if (plan.options.report) {
    if (auto written = report::write_report(*plan.options.report, record); !written) {
      spdlog::error("{}", written.error().describe());
    }
  }
  return result;
}

}  // namespace gangrun::launch
