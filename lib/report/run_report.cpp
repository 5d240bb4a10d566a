#include "report/run_report.hpp"

#include "report/worker_end.hpp"
#include "util/fd.hpp"
#include "util/signals.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <string_view>

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

// The gang doctor's findings, one key each, into the attempt's object; a
// finding the doctor did not make has no key.
void add_doctor_findings(const DoctorFindings& found, nlohmann::json& attempt) {
  if (const std::optional<HangFinding>& hang = found.hang) {
    attempt["hang"] = {{"timeout_s", hang->timeout_s},
                       {"silent_for_s", hang->silent_for_s},
                       {"reported_at", format_time(hang->reported_at)},
                       {"action", hang->action},
                       {"not_at_store", hang->not_at_store ? nlohmann::json(*hang->not_at_store)
                                                           : nlohmann::json()},
                       {"stopped", hang->stopped},
                       {"stacks", hang->stacks}};
    if (hang->flight_recorder_dumps) {
      attempt["hang"]["flight_recorder_dumps"] = *hang->flight_recorder_dumps;
    }
  }
  if (const std::optional<StartTimeoutFinding>& start = found.start_timeout) {
    attempt["start_timeout"] = {{"timeout_s", start->timeout_s},
                                {"action", start->action},
                                {"starting", start->starting},
                                {"importing", start->importing},
                                {"stacks", start->stacks}};
  }
  if (found.stacks_at_failure) attempt["stacks_at_failure"] = *found.stacks_at_failure;
  if (const std::optional<TimerExpiredFinding>& timer = found.timer_expired) {
    attempt["timer_expired"] = {{"rank", timer->rank},
                                {"pid", timer->pid},
                                {"scope_id", timer->scope_id},
                                {"signal", timer->signal}};
    if (timer->stacks) attempt["timer_expired"]["stacks"] = *timer->stacks;
  }
  if (const std::optional<LateToStoreFinding>& late = found.late_to_store) {
    attempt["late_to_store"] = {{"after_s", late->after_s},
                                {"host", late->host},
                                {"store", late->store},
                                {"ranks", late->ranks}};
  }
  if (found.straggler_watch) attempt["straggler_watch"] = *found.straggler_watch;
  if (!found.flight_recorder_dumps.empty()) {
    attempt["flight_recorder_dumps"] = found.flight_recorder_dumps;
  }
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
    add_doctor_findings(attempt.doctor, attempts.back());
  }
  return {
      {"version", 1},
      {"run_id", run.run_id},
      {"host", run.host},
      {"node", run.node ? nlohmann::json(*run.node) : nlohmann::json()},
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

namespace {

tl::unexpected<Error> cannot_write(const std::string& path, int error_number) {
  return fail(ErrorCode::io, "cannot write the report " + path + ": " + errno_text(error_number));
}

// All of text to fd, through short writes and EINTR; errno on failure.
bool write_whole(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t wrote = ::write(fd, text.data(), text.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      if (wrote == 0) errno = EIO;
      return false;
    }
    text.remove_prefix(static_cast<std::size_t>(wrote));
  }
  return true;
}

// A path that is no regular file (/dev/stdout, a named pipe) is written as
// it is: there is nothing to rename over it.
Expected<void> write_in_place(const std::string& path, std::string_view text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (!fd.valid()) return cannot_write(path, errno);
  if (!write_whole(fd.get(), text)) return cannot_write(path, errno);
  if (::close(fd.release()) != 0 && errno != EINTR) return cannot_write(path, errno);
  return {};
}

}  // namespace

Expected<void> write_file_atomically(const std::string& path, std::string_view text) {
  struct stat existing {};
  bool exists = ::stat(path.c_str(), &existing) == 0;
  if (exists && !S_ISREG(existing.st_mode)) return write_in_place(path, text);
  // Beside the file, so that the rename stays on its filesystem. A full
  // disk fails the write (or, where space is only taken at write-back, the
  // fsync); the half-written copy is removed and any earlier report stays.
  std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (!fd.valid()) return cannot_write(path, errno);
  auto give_up = [&](int error_number) {
    fd.reset();
    ::unlink(temporary.c_str());
    return cannot_write(path, error_number);
  };
  if (exists) (void)::fchmod(fd.get(), existing.st_mode & 07777);
  if (!write_whole(fd.get(), text) || ::fsync(fd.get()) != 0) return give_up(errno);
  if (::close(fd.release()) != 0 && errno != EINTR) {
    int error_number = errno;
    ::unlink(temporary.c_str());
    return cannot_write(path, error_number);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    int error_number = errno;
    ::unlink(temporary.c_str());
    return cannot_write(path, error_number);
  }
  return {};
}

Expected<void> write_report(const std::string& path, const RunRecord& run) {
  return write_file_atomically(path, json_text(to_json(run)) + "\n");
}

}  // namespace gangrun::report
