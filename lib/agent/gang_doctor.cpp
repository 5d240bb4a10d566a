#include "agent/gang_doctor.hpp"

#include "doctor/stack_tool.hpp"
#include "doctor/stacks_json.hpp"
#include "util/exit_codes.hpp"
#include "util/strings.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace gangrun::agent {

namespace {

// A hang's stacks may take a while on a loaded machine: nothing waits for
// them but the hang's own action. A failure's must come at once, while the
// failure window keeps the others running.
constexpr std::chrono::milliseconds k_hang_read_limit{5000};
constexpr std::chrono::milliseconds k_failure_read_limit{1000};

const char* on_hang_word(config::OnHang action) {
  switch (action) {
    case config::OnHang::report:
      return "report";
    case config::OnHang::stop:
      return "stop";
    case config::OnHang::restart:
      return "restart";
  }
  return "stop";
}

std::string seconds_text(double seconds) {
  return strings::duration_text(std::chrono::milliseconds(static_cast<long>(seconds * 1000)));
}

std::string indented(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += "\n  " + line;
  return text;
}

}  // namespace

GangDoctor::GangDoctor(boost::asio::io_context& io, supervise::Spawner& spawner,
                       const launch::LaunchPlan& plan, supervise::Gang& gang, StopHandler stop_hung)
    : plan_(plan), gang_(gang), stop_hung_(std::move(stop_hung)), probe_(io, spawner) {
  const launch::DoctorPlan& settings = plan.doctor;
  if (settings.hang_timeout_s || settings.stacks_at_failure) {
    std::optional<std::string> interpreter_dir;
    if (plan.program.interpreter) {
      interpreter_dir =
          std::filesystem::path(plan.program.interpreter->path).parent_path().string();
    }
    tool_ = doctor::find_stack_tool(settings.stack_tool, interpreter_dir, plan.host_env);
  }
  if (settings.hang_timeout_s) {
    auto timeout = std::chrono::duration_cast<HangWatch::Clock::duration>(
        std::chrono::duration<double>(*settings.hang_timeout_s));
    watch_.emplace(
        io, timeout, [this] { return gang_.live_worker_list(); },
        [this](HangWatch::Clock::duration silent_for) { on_hang(silent_for); });
  }
}

void GangDoctor::round_started(std::optional<std::string> attempt_dir) {
  attempt_dir_ = std::move(attempt_dir);
  read_for_failure_ = false;
  round_over_ = false;
  findings_ = {};
  if (watch_) watch_->start();
}

std::vector<StackTarget> GangDoctor::live_targets() const {
  std::vector<StackTarget> targets;
  for (const supervise::Gang::LiveWorker& worker : gang_.live_worker_list()) {
    targets.push_back({.rank = worker.rank, .pid = worker.pid});
  }
  return targets;
}

// ---- a hang -------------------------------------------------------------------

void GangDoctor::on_hang(HangWatch::Clock::duration silent_for) {
  std::vector<StackTarget> targets = live_targets();
  if (round_over_ || probe_.running() || targets.empty()) return;
  double silent_s = std::chrono::duration<double>(silent_for).count();
  spdlog::warn(
      "no rank made progress for {} (--hang-timeout {}): no output line from any of the "
      "{} running ranks; reading their stacks before anything is stopped",
      seconds_text(silent_s), seconds_text(*plan_.doctor.hang_timeout_s), targets.size());
  if (!tool_ && !told_missing_tool_) {
    told_missing_tool_ = true;
    spdlog::warn("{}", doctor::missing_tool_hint());
  }
  probe_.start(tool_, plan_.host, std::move(targets), plan_.host_env, k_hang_read_limit,
               [this, silent_s](std::vector<doctor::RankStacks> ranks) {
                 after_hang_read(std::move(ranks), silent_s);
               });
}

void GangDoctor::after_hang_read(std::vector<doctor::RankStacks> ranks, double silent_for_s) {
  std::vector<doctor::StackGroup> groups = doctor::group_by_stack(ranks);
  std::vector<std::string> summary = doctor::summary_lines(groups);
  std::optional<std::string> file = write_text("hang-stacks.txt", doctor::full_text(ranks, groups));
  const config::OnHang action = plan_.doctor.on_hang;
  spdlog::warn("where the ranks are, the odd ones out first:{}{}", indented(summary),
               file ? "\nevery thread of every rank: " + *file : "");
  findings_.hang = nlohmann::json{{"timeout_s", *plan_.doctor.hang_timeout_s},
                                  {"silent_for_s", silent_for_s},
                                  {"action", on_hang_word(action)},
                                  {"stacks", doctor::stacks_json(ranks, summary, file)}};
  if (round_over_) return deliver_if_over();
  switch (action) {
    case config::OnHang::report:
      spdlog::warn("--on-hang report: the workers go on; watching for the next {} of silence",
                   seconds_text(*plan_.doctor.hang_timeout_s));
      if (watch_) watch_->start();
      return;
    case config::OnHang::stop:
      spdlog::warn("--on-hang stop: stopping the workers (gangrun exits with {})",
                   exit_codes::k_hang);
      return stop_hung_();
    case config::OnHang::restart:
      spdlog::warn("--on-hang restart: stopping the workers to restart them");
      return stop_hung_();
  }
}

// ---- a failure ----------------------------------------------------------------

void GangDoctor::worker_failed() {
  if (watch_) watch_->stop();  // the round is ending: a failure, not a hang
  // Only a Python program's ranks have stacks the tool reads; there is no
  // time to tell anyone how to install it now.
  if (!plan_.doctor.stacks_at_failure || !tool_ || !plan_.program.interpreter) return;
  if (read_for_failure_ || round_over_ || probe_.running()) return;
  std::vector<StackTarget> targets = live_targets();
  if (targets.empty()) return;
  read_for_failure_ = true;
  probe_.start(
      tool_, plan_.host, std::move(targets), plan_.host_env, k_failure_read_limit,
      [this](std::vector<doctor::RankStacks> ranks) { after_failure_read(std::move(ranks)); });
}

void GangDoctor::after_failure_read(std::vector<doctor::RankStacks> ranks) {
  std::vector<doctor::StackGroup> groups = doctor::group_by_stack(ranks);
  std::vector<std::string> summary = doctor::summary_lines(groups);
  std::optional<std::string> file =
      write_text("failure-stacks.txt", doctor::full_text(ranks, groups));
  spdlog::warn("where the other ranks were when the first failure was seen:{}{}", indented(summary),
               file ? "\nevery thread of every rank: " + *file : "");
  findings_.stacks_at_failure = doctor::stacks_json(ranks, summary, file);
  deliver_if_over();
}

// ---- the round's end ------------------------------------------------------------

void GangDoctor::round_ended(std::function<void(Findings)> then) {
  round_over_ = true;
  if (watch_) watch_->stop();
  after_reading_ = std::move(then);
  if (!probe_.running()) deliver_if_over();
}

void GangDoctor::deliver_if_over() {
  if (!round_over_ || !after_reading_) return;
  std::function<void(Findings)> then = std::move(after_reading_);
  after_reading_ = nullptr;
  then(std::move(findings_));
  findings_ = {};
}

std::optional<std::string> GangDoctor::write_text(const std::string& name,
                                                  const std::string& text) {
  if (!attempt_dir_) return std::nullopt;
  std::string path = *attempt_dir_ + "/" + name;
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    spdlog::warn("could not write {}: {}", path, std::strerror(errno));
    return std::nullopt;
  }
  return path;
}

}  // namespace gangrun::agent
