#include "agent/gang_doctor.hpp"

#include "agent/flight_recorder.hpp"
#include "doctor/stack_tool.hpp"
#include "doctor/stacks_json.hpp"
#include "doctor/store_peers.hpp"
#include "report/blame.hpp"
#include "util/env.hpp"
#include "util/exit_codes.hpp"
#include "util/signals.hpp"
#include "util/strings.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

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

// "3 s", "2.5 s", "0.012 s": the value as a user would write it.
std::string seconds_text(double seconds) { return fmt::format("{:.4g} s", seconds); }

// gangrun chose the interpreter or read it from the script's #! line, or
// the program is one (gangrun python train.py).
bool runs_python(const launch::LaunchPlan& plan) {
  return plan.program.interpreter.has_value() ||
         std::filesystem::path(plan.program.executable).filename().string().starts_with("python");
}

std::string indented(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += "\n  " + line;
  return text;
}

}  // namespace

GangDoctor::GangDoctor(boost::asio::io_context& io, supervise::Spawner& spawner,
                       const launch::LaunchPlan& plan, supervise::Gang& gang, StopHandler stop_hung)
    : plan_(plan),
      gang_(gang),
      stop_hung_(std::move(stop_hung)),
      probe_(io, spawner),
      sampler_(io, spawner),
      sample_timer_(io),
      dump_wait_(io) {
  const launch::DoctorPlan& settings = plan.doctor;
  if (settings.hang_timeout_s || settings.stacks_at_failure || settings.straggler_interval_s) {
    std::optional<std::string> interpreter_dir;
    if (plan.program.interpreter) {
      interpreter_dir =
          std::filesystem::path(plan.program.interpreter->path).parent_path().string();
    }
    tool_ = doctor::find_stack_tool(settings.stack_tool, interpreter_dir, plan.host_env);
  }
  if (env_lookup(plan.host_env, "TORCHELASTIC_ENABLE_FILE_TIMER") == "1") {
    // torchrun's agent names the pipe when the user did not (and tells the workers).
    std::string path = env_lookup(plan.host_env, "TORCHELASTIC_TIMER_FILE")
                           .value_or(env_lookup(plan.host_env, "TMPDIR").value_or("/tmp") +
                                     "/watchdog_timer_gangrun_" + std::to_string(::getpid()));
    auto opened = FileTimers::open(
        io, path, [this](const FileTimers::Expired& expired) { on_timer_expired(expired); });
    if (opened) {
      file_timers_ = std::move(*opened);
    } else {
      spdlog::warn("{}; the workers' FileTimerClient will not reach gangrun",
                   opened.error().describe());
    }
  }
  if (settings.hang_timeout_s) {
    auto timeout = std::chrono::duration_cast<HangWatch::Clock::duration>(
        std::chrono::duration<double>(*settings.hang_timeout_s));
    watch_.emplace(
        io, timeout, [this] { return live_workers(); },
        [this](HangWatch::Clock::duration silent_for) { on_hang(silent_for); });
  }
}

void GangDoctor::round_started(std::optional<std::string> attempt_dir, std::string store) {
  attempt_dir_ = std::move(attempt_dir);
  store_ = std::move(store);
  read_for_failure_ = false;
  round_over_ = false;
  findings_ = {};
  if (file_timers_) file_timers_->clear();
  if (watch_) watch_->start();
  tally_ = {};
  stragglers_named_.clear();
  if (plan_.doctor.straggler_interval_s) {
    if (tool_) {
      sample_later();
    } else if (!told_missing_tool_) {
      told_missing_tool_ = true;
      spdlog::warn("--straggler-watch reads the ranks' stacks: {}", doctor::missing_tool_hint());
    }
  }
}

// ---- stragglers -------------------------------------------------------------------

void GangDoctor::sample_later() {
  sample_timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(*plan_.doctor.straggler_interval_s)));
  sample_timer_.async_wait([this](const boost::system::error_code& error) {
    if (error || round_over_) return;
    std::vector<StackTarget> targets = live_targets();
    if (targets.size() < 2 || sampler_.running()) return sample_later();
    sampler_.start(
        tool_, plan_.host, targets, plan_.host_env, k_failure_read_limit,
        [this](const std::vector<doctor::RankStacks>& ranks) { after_sample(ranks); },
        /*nonblocking=*/true);
  });
}

void GangDoctor::after_sample(const std::vector<doctor::RankStacks>& ranks) {
  if (round_over_) return deliver_if_over();
  tally_.add(ranks);
  for (int rank : tally_.stragglers()) {
    if (stragglers_named_.insert(rank).second) {
      spdlog::warn("straggler: {}", tally_.describe(rank));
    }
  }
  sample_later();
}

EnvMap GangDoctor::worker_env(const std::string& attempt_path) {
  EnvMap env;
  if (file_timers_) env["TORCHELASTIC_TIMER_FILE"] = file_timers_->path();
  recorder_dir_.reset();
  if (plan_.doctor.flight_recorder) {
    recorder_dir_ = attempt_path + "/flight_recorder";
    env.merge(flight_recorder_env(*recorder_dir_, plan_.host_env));
  }
  return env;
}

std::vector<supervise::Gang::LiveWorker> GangDoctor::live_workers() const {
  std::vector<supervise::Gang::LiveWorker> workers = gang_.live_worker_list();
  if (!file_timers_) return workers;
  for (supervise::Gang::LiveWorker& worker : workers) {
    auto request = file_timers_->last_request_from(worker.pid);
    if (request && (!worker.last_line_at || *request > *worker.last_line_at)) {
      worker.last_line_at = request;
    }
  }
  return workers;
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
  double silent_s = static_cast<double>(
                        std::chrono::duration_cast<std::chrono::milliseconds>(silent_for).count()) /
                    1000.0;
  spdlog::warn(
      "no rank made progress for {} (--hang-timeout {}): no output line from any of the "
      "{} running ranks; reading their stacks before anything is stopped",
      seconds_text(silent_s), seconds_text(*plan_.doctor.hang_timeout_s), targets.size());
  if (!tool_ && !told_missing_tool_) {
    told_missing_tool_ = true;
    spdlog::warn("{}", doctor::missing_tool_hint());
  }
  probe_.start(tool_, plan_.host, targets, plan_.host_env, k_hang_read_limit,
               [this, silent_s](const std::vector<doctor::RankStacks>& ranks) {
                 after_hang_read(ranks, silent_s);
               });
}

void GangDoctor::after_hang_read(const std::vector<doctor::RankStacks>& ranks,
                                 double silent_for_s) {
  const config::OnHang action = plan_.doctor.on_hang;
  auto [not_at_store, store_line] = store_arrivals(ranks);
  nlohmann::json stacks =
      tell(ranks, "hang-stacks.txt", "where the ranks are, the odd ones out first:", store_line);
  findings_.hang = nlohmann::json{{"timeout_s", *plan_.doctor.hang_timeout_s},
                                  {"silent_for_s", silent_for_s},
                                  {"action", on_hang_word(action)},
                                  {"not_at_store", not_at_store},
                                  {"stacks", std::move(stacks)}};
  if (round_over_) return deliver_if_over();
  int asked = recorder_dir_ ? request_flight_recorder_dumps(*recorder_dir_) : 0;
  if (asked > 0) {
    spdlog::warn("asked {} rank{} for the NCCL flight recorder's dump", asked,
                 asked == 1 ? "" : "s");
  }
  act_on_hang(asked, HangWatch::Clock::now());
}

void GangDoctor::act_on_hang(int dumps_asked, HangWatch::Clock::time_point asked_at) {
  // A rank's watchdog looks at its pipe about once a second; a dump that has
  // not come after a few is not waited for any longer.
  constexpr auto k_dump_wait = std::chrono::seconds(5);
  constexpr auto k_dump_poll = std::chrono::milliseconds(100);
  if (dumps_asked > 0 && !round_over_ &&
      static_cast<int>(flight_recorder_dumps(*recorder_dir_).size()) < dumps_asked &&
      HangWatch::Clock::now() - asked_at < k_dump_wait) {
    dump_wait_.expires_after(k_dump_poll);
    dump_wait_.async_wait([this, dumps_asked, asked_at](const boost::system::error_code& error) {
      if (!error) act_on_hang(dumps_asked, asked_at);
    });
    return;
  }
  if (round_over_) return deliver_if_over();
  if (dumps_asked > 0 && findings_.hang) {
    (*findings_.hang)["flight_recorder_dumps"] = flight_recorder_dumps(*recorder_dir_);
  }
  const config::OnHang action = plan_.doctor.on_hang;
  switch (action) {
    case config::OnHang::report:
      spdlog::warn("--on-hang report: the workers go on; watching for the next {} of silence",
                   seconds_text(*plan_.doctor.hang_timeout_s));
      if (watch_) watch_->watch_again();
      return;
    case config::OnHang::stop:
      spdlog::warn("--on-hang stop: stopping the workers (gangrun exits with {})",
                   exit_codes::k_hang);
      return stop_hung_();
    case config::OnHang::restart:
      spdlog::warn(
          "--on-hang restart: stopping the workers (they start again while --max-restarts "
          "allows)");
      return stop_hung_();
  }
}

std::pair<nlohmann::json, std::string> GangDoctor::store_arrivals(
    const std::vector<doctor::RankStacks>& ranks) const {
  std::size_t colon = store_.rfind(':');
  if (colon == std::string::npos) return {nullptr, ""};
  std::optional<std::int64_t> port = strings::parse_int(store_.substr(colon + 1));
  if (!port || *port <= 0) return {nullptr, ""};
  std::vector<long> pids;
  pids.reserve(ranks.size());
  for (const doctor::RankStacks& rank : ranks) pids.push_back(rank.pid);
  std::set<long> connected = doctor::connected_to_port(pids, static_cast<int>(*port));
  std::vector<int> missing;
  for (const doctor::RankStacks& rank : ranks) {
    if (!connected.contains(rank.pid)) missing.push_back(rank.rank);
  }
  if (missing.empty()) return {nlohmann::json::array(), ""};
  if (connected.empty()) {
    // Said only of Python workers: other programs need not meet through it.
    if (!runs_python(plan_)) return {nullptr, ""};
    return {missing, "no rank has connected to the store at " + store_ +
                         " yet: none has reached init_process_group"};
  }
  return {missing, report::rank_list(missing) + (missing.size() == 1 ? " has" : " have") +
                       " not connected to the store at " + store_ + ": the others wait for " +
                       (missing.size() == 1 ? "it" : "them") +
                       " in init_process_group (or a rendezvous)"};
}

// ---- a file timer that expired ----------------------------------------------------

void GangDoctor::on_timer_expired(const FileTimers::Expired& expired) {
  std::optional<int> rank;
  for (const supervise::Gang::LiveWorker& worker : gang_.live_worker_list()) {
    if (worker.pid == expired.pid) rank = worker.rank;
  }
  if (!rank || round_over_) {
    spdlog::debug("file timers: pid {} is not a running worker; its timer '{}' is dropped",
                  expired.pid, expired.scope_id);
    return;
  }
  const std::string kill_text = expired.signal > 0
                                    ? "killing it with " + signals::name(expired.signal)
                                    : "not killing it (its signal is 0)";
  spdlog::warn(
      "rank {} (pid {}): its timer '{}' (torch.distributed.elastic.timer) expired {} "
      "ago; reading every rank's stack, then {}",
      *rank, expired.pid, expired.scope_id, seconds_text(expired.late_s), kill_text);
  auto act = [this, expired] {
    if (expired.signal > 0) gang_.signal_worker(expired.pid, expired.signal);
  };
  nlohmann::json timer{{"rank", *rank},
                       {"pid", expired.pid},
                       {"scope_id", expired.scope_id},
                       {"signal", expired.signal}};
  if (probe_.running()) {
    findings_.timer_expired = std::move(timer);
    return act();
  }
  probe_.start(tool_, plan_.host, live_targets(), plan_.host_env, k_failure_read_limit,
               [this, act, timer](const std::vector<doctor::RankStacks>& ranks) mutable {
                 timer["stacks"] = tell(ranks, "timer-stacks.txt",
                                        "where the ranks were when the timer expired:");
                 findings_.timer_expired = std::move(timer);
                 if (round_over_) return deliver_if_over();
                 act();
               });
}

// ---- a failure ----------------------------------------------------------------

void GangDoctor::worker_failed() {
  if (watch_) watch_->stop();  // the round is ending: a failure, not a hang
  // Only a Python program's ranks have stacks the tool reads; there is no
  // time to tell anyone how to install it now.
  if (!plan_.doctor.stacks_at_failure || !tool_ || !runs_python(plan_)) return;
  if (read_for_failure_ || round_over_ || probe_.running()) return;
  std::vector<StackTarget> targets = live_targets();
  if (targets.empty()) return;
  read_for_failure_ = true;
  probe_.start(tool_, plan_.host, targets, plan_.host_env, k_failure_read_limit,
               [this](const std::vector<doctor::RankStacks>& ranks) { after_failure_read(ranks); });
}

void GangDoctor::after_failure_read(const std::vector<doctor::RankStacks>& ranks) {
  findings_.stacks_at_failure = tell(ranks, "failure-stacks.txt",
                                     "where the other ranks were when the first failure was seen:");
  deliver_if_over();
}

// ---- the round's end ------------------------------------------------------------

void GangDoctor::round_ended(std::function<void(Findings)> then) {
  round_over_ = true;
  if (watch_) watch_->stop();
  sample_timer_.cancel();
  dump_wait_.cancel();
  after_reading_ = std::move(then);
  deliver_if_over();
}

void GangDoctor::deliver_if_over() {
  if (!round_over_ || !after_reading_ || probe_.running() || sampler_.running()) return;
  if (!tally_.empty()) findings_.straggler_watch = tally_.to_json();
  if (recorder_dir_) findings_.flight_recorder_dumps = flight_recorder_dumps(*recorder_dir_);
  std::function<void(Findings)> then = std::move(after_reading_);
  after_reading_ = nullptr;
  then(std::move(findings_));
  findings_ = {};
}

nlohmann::json GangDoctor::tell(const std::vector<doctor::RankStacks>& ranks,
                                const std::string& file_name, const std::string& heading,
                                const std::string& extra_line) {
  std::vector<doctor::StackGroup> groups = doctor::group_by_stack(ranks);
  std::vector<std::string> summary = doctor::summary_lines(groups);
  std::optional<std::string> file = write_text(file_name, doctor::full_text(ranks, groups));
  spdlog::warn("{}{}{}{}", heading, indented(summary),
               extra_line.empty() ? "" : "\n  " + extra_line,
               file ? "\n  every thread of every rank: " + *file : "");
  return doctor::stacks_json(ranks, summary, file);
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
