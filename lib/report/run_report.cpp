#include "report/run_report.hpp"

#include "report/worker_end.hpp"
#include "util/signals.hpp"

#include <fmt/format.h>

#include <ctime>
#include <fstream>

namespace gangrun::report {
namespace {

nlohmann::json optional_signal(const std::optional<int>& signal_number) {
  if (!signal_number) return nullptr;
  return signals::name(*signal_number);
}

nlohmann::json optional_text(const std::optional<std::string>& text) {
  return text ? nlohmann::json(*text) : nlohmann::json();
}

nlohmann::json error_json(const std::optional<WorkerError>& error) {
  if (!error) return nullptr;
  return {{"message", error->message},
          {"traceback", optional_text(error->traceback)},
          {"timestamp", optional_text(error->timestamp)}};
}

nlohmann::json interpreter_json(const std::optional<Interpreter>& interpreter) {
  if (!interpreter) return nullptr;
  return {{"path", interpreter->path},
          {"source", source_name(interpreter->source)},
          {"origin", interpreter->origin}};
}

nlohmann::json hint_json(const RunRecord& run, const WorkerRecord& worker) {
  if (!run.interpreter) return nullptr;
  auto module = missing_launcher_module(worker.last_lines, worker.error);
  if (!module) module = worker.unimportable_module;
  if (!module) return nullptr;
  return interpreter_hint(*run.interpreter, *module);
}

nlohmann::json worker_json(const RunRecord& run, const WorkerRecord& worker,
                           const AttemptRecord& attempt) {
  nlohmann::json out = {
      {"rank", worker.rank},
      {"local_rank", worker.local_rank},
      {"pid", worker.pid},
      {"exit_code", worker.exit_code ? nlohmann::json(*worker.exit_code) : nlohmann::json()},
      {"signal", optional_signal(worker.signal)},
      {"shell_code", worker.shell_code},
      {"started_at", format_time(worker.started_at)},
      {"ended_at", format_time(worker.ended_at)},
      {"duration_s", std::chrono::duration<double>(worker.ended_at - worker.started_at).count()},
      {"peak_rss_kib", worker.peak_rss_kib},
      {"stopped_by_gangrun", worker.stopped_by_gangrun},
      {"ended", describe_worker_end(worker, attempt)},
      {"error", error_json(worker.error)},
      {"error_file", optional_text(worker.error_file)},
      {"spawn_error", optional_text(worker.spawn_error)},
      {"hint", hint_json(run, worker)},
  };
  return out;
}

}  // namespace

std::string format_time(TimePoint time) {
  auto since_epoch = time.time_since_epoch();
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - seconds);
  std::time_t whole = static_cast<std::time_t>(seconds.count());
  std::tm utc{};
  ::gmtime_r(&whole, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &utc);
  return fmt::format("{}.{:03d}Z", buffer, millis.count());
}

nlohmann::json to_json(const RunRecord& run) {
  nlohmann::json attempts = nlohmann::json::array();
  nlohmann::json root_cause = nullptr;
  for (const AttemptRecord& attempt : run.attempts) {
    nlohmann::json workers = nlohmann::json::array();
    for (const WorkerRecord& worker : attempt.workers) {
      workers.push_back(worker_json(run, worker, attempt));
    }
    nlohmann::json attempt_root = nullptr;
    nlohmann::json first_failure = nullptr;
    if (attempt.first_failure) {
      const WorkerRecord& first = attempt.workers.at(*attempt.first_failure);
      first_failure = {{"rank", first.rank}, {"local_rank", first.local_rank}};
    }
    if (attempt.root_cause) {
      const WorkerRecord& root = attempt.workers.at(*attempt.root_cause);
      attempt_root = {{"rank", root.rank}, {"local_rank", root.local_rank}};
      root_cause = worker_json(run, root, attempt);
      root_cause["attempt"] = attempt.attempt;
    } else {
      root_cause = nullptr;
    }
    attempts.push_back({
        {"attempt", attempt.attempt},
        {"root_cause", attempt_root},
        {"first_failure", first_failure},
        {"blame", attempt.blame ? nlohmann::json(*attempt.blame) : nlohmann::json()},
        {"stopped_by_signal", optional_signal(attempt.stopped_by_signal)},
        {"teardown_latency_ms", attempt.teardown_latency_ms
                                    ? nlohmann::json(*attempt.teardown_latency_ms)
                                    : nlohmann::json()},
        {"workers", workers},
        {"incomplete_logs", attempt.incomplete_logs},
    });
    if (attempt.hang) attempts.back()["hang"] = *attempt.hang;
    if (attempt.stacks_at_failure)
      attempts.back()["stacks_at_failure"] = *attempt.stacks_at_failure;
    if (attempt.timer_expired) attempts.back()["timer_expired"] = *attempt.timer_expired;
    if (attempt.late_to_store) attempts.back()["late_to_store"] = *attempt.late_to_store;
    if (attempt.straggler_watch) attempts.back()["straggler_watch"] = *attempt.straggler_watch;
    if (!attempt.flight_recorder_dumps.empty()) {
      attempts.back()["flight_recorder_dumps"] = attempt.flight_recorder_dumps;
    }
  }
  return {
      {"version", 1},
      {"run_id", run.run_id},
      {"host", run.host},
      {"log_dir", run.log_dir ? nlohmann::json(*run.log_dir) : nlohmann::json()},
      {"entrypoint", run.entrypoint},
      {"interpreter", interpreter_json(run.interpreter)},
      {"started_at", format_time(run.started_at)},
      {"ended_at", format_time(run.ended_at)},
      {"exit_code", run.exit_code},
      {"gangrun_signal", optional_signal(run.gangrun_signal)},
      {"restarts", run.attempts.empty() ? 0 : static_cast<int>(run.attempts.size()) - 1},
      {"plan", run.plan},
      {"attempts", attempts},
      {"root_cause", root_cause},
      {"job", run.job ? *run.job : nlohmann::json()},
  };
}

std::string json_text(const nlohmann::json& document, int indent) {
  return document.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

Expected<void> write_report(const std::string& path, const RunRecord& run) {
  std::string text = json_text(to_json(run)) + "\n";
  std::ofstream file(path, std::ios::trunc);
  if (!file) return fail(ErrorCode::io, "cannot write report " + path + ": " + errno_text(errno));
  file << text;
  if (!file) return fail(ErrorCode::io, "cannot write report " + path + ": " + errno_text(errno));
  return {};
}

}  // namespace gangrun::report
