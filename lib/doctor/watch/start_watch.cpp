#include "doctor/watch/start_watch.hpp"

#include "doctor/stack_tool.hpp"
#include "doctor/stacks.hpp"
#include "doctor/store_peers.hpp"
#include "doctor/straggler.hpp"
#include "doctor/watch/silence_exchange.hpp"
#include "util/exit_codes.hpp"
#include "util/strings.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

namespace gangrun::doctor {

namespace {

// As a hang's: nothing waits for the reading but the start timeout's action.
constexpr std::chrono::milliseconds k_start_read_limit{5000};

std::optional<int> store_port(const std::string& store) {
  std::size_t colon = store.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  std::optional<std::int64_t> port = strings::parse_int(store.substr(colon + 1));
  if (!port || *port <= 0 || *port > 65535) return std::nullopt;
  return static_cast<int>(*port);
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::vector<std::string> words;
  words.reserve(ranks.size());
  for (int rank : ranks) words.push_back(std::to_string(rank));
  return fmt::format("rank{} {}", ranks.size() == 1 ? "" : "s", strings::join(words, ", "));
}

}  // namespace

// ---- the tally ----------------------------------------------------------------

void StartTally::round_started(Clock::time_point at, bool watched) {
  started_.clear();
  seen_any_ = false;
  ended_at_.reset();
  if (!watched) ended_at_ = at;
}

void StartTally::look(const std::vector<Seen>& live, Clock::time_point now) {
  if (ended_at_) return;
  for (const Seen& rank : live) {
    if (rank.printed || rank.at_store) started_.insert(rank.rank);
  }
  if (live.empty()) {
    if (seen_any_) ended_at_ = now;
    return;
  }
  seen_any_ = true;
  bool all = std::all_of(live.begin(), live.end(),
                         [this](const Seen& rank) { return started_.contains(rank.rank); });
  if (all) ended_at_ = now;
}

std::vector<int> StartTally::still_starting(const std::vector<int>& live) const {
  std::vector<int> starting;
  for (int rank : live) {
    if (!started_.contains(rank)) starting.push_back(rank);
  }
  std::sort(starting.begin(), starting.end());
  return starting;
}

std::vector<int> importing_ranks(const std::vector<RankStacks>& ranks,
                                 const std::vector<int>& starting) {
  std::vector<int> importing;
  for (const RankStacks& rank : ranks) {
    if (std::find(starting.begin(), starting.end(), rank.rank) == starting.end()) continue;
    const ThreadStack* main = main_thread(rank.threads, rank.pid);
    if (main != nullptr && is_importing(main->frames)) importing.push_back(rank.rank);
  }
  std::sort(importing.begin(), importing.end());
  return importing;
}

std::string importing_line(const std::vector<int>& importing, std::size_t starting) {
  if (importing.empty()) return "";
  if (importing.size() == starting && starting > 1) {
    return "every rank still starting is importing a module (a slow filesystem, a large package)";
  }
  return fmt::format("{} {} importing a module (a slow filesystem, a large package)",
                     ranks_text(importing), importing.size() == 1 ? "is" : "are");
}

// ---- the watch ----------------------------------------------------------------

StartWatch::StartWatch(boost::asio::io_context& io, const launch::LaunchPlan& plan,
                       const supervise::Gang& gang, StackReader& reader,
                       std::function<void()> stop_hung, std::function<void()> reading_ended)
    : plan_(plan),
      gang_(gang),
      reader_(reader),
      stop_hung_(std::move(stop_hung)),
      reading_ended_(std::move(reading_ended)),
      timer_(io),
      // As often as the silences travel, so that the start's end is seen
      // within a tick of the hang watch's own precision.
      tick_(plan.doctor.hang_timeout_s ? SilenceExchange::tick_for(*plan.doctor.hang_timeout_s)
                                       : std::chrono::milliseconds(1000)) {}

void StartWatch::round_started(const RoundStart& round) {
  round_ = round;
  over_ = false;
  reading_ = false;
  found_.reset();
  tally_.round_started(round.at, runs_python(plan_) && store_port(round.store).has_value());
  if (plan_.doctor.start_timeout_s)
    next_report_at_ = round.at + steady(*plan_.doctor.start_timeout_s);
  look();
}

void StartWatch::round_ended() {
  // The lead may watch the other nodes on: its own ranks no longer start.
  tally_.round_ended(Clock::now());
  over_ = true;
  timer_.cancel();
}

void StartWatch::add_findings(report::DoctorFindings& findings) const {
  if (found_) findings.start_timeout = *found_;
}

std::vector<int> StartWatch::live_ranks() const {
  std::vector<int> ranks;
  for (const supervise::Gang::LiveWorker& worker : gang_.live_worker_list()) {
    ranks.push_back(worker.rank);
  }
  return ranks;
}

void StartWatch::tell_silent_while_starting(Clock::duration silent_for) {
  std::vector<int> starting = tally_.still_starting(live_ranks());
  double silent_s = std::chrono::duration<double>(silent_for).count();
  spdlog::info(
      "no rank has made progress for {} (--hang-timeout {}), but the round is still starting{}: "
      "not a hang; --hang-timeout counts from the end of the start{}",
      seconds_text(std::floor(silent_s * 10) / 10), seconds_text(*plan_.doctor.hang_timeout_s),
      starting.empty() ? ""
                       : fmt::format(" ({} {} neither printed a line nor connected to the store)",
                                     ranks_text(starting), starting.size() == 1 ? "has" : "have"),
      plan_.doctor.start_timeout_s ? fmt::format(", and --start-timeout ({}) bounds the start",
                                                 seconds_text(*plan_.doctor.start_timeout_s))
                                   : " (--start-timeout 0: the start has no limit)");
}

void StartWatch::look() {
  if (over_ || !tally_.starting()) return;
  std::vector<supervise::Gang::LiveWorker> live = gang_.live_worker_list();
  std::vector<long> pids;
  for (const supervise::Gang::LiveWorker& worker : live) {
    if (!tally_.has_started(worker.rank) && !worker.last_line_at) pids.push_back(worker.pid);
  }
  std::set<long> connected;
  if (!pids.empty()) connected = connected_to_port(pids, *store_port(round_.store));
  std::vector<StartTally::Seen> seen;
  std::vector<int> ranks;
  for (const supervise::Gang::LiveWorker& worker : live) {
    seen.push_back({.rank = worker.rank,
                    .printed = worker.last_line_at.has_value(),
                    .at_store = connected.contains(worker.pid)});
    ranks.push_back(worker.rank);
  }
  Clock::time_point now = Clock::now();
  tally_.look(seen, now);
  if (!tally_.starting()) return;
  if (plan_.doctor.start_timeout_s && now >= next_report_at_ && !reading_ && !reader_.running() &&
      !live.empty()) {
    on_start_timeout(tally_.still_starting(ranks));
  }
  timer_.expires_after(tick_);
  timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error) look();
  });
}

void StartWatch::on_start_timeout(const std::vector<int>& starting) {
  const double timeout_s = *plan_.doctor.start_timeout_s;
  spdlog::warn(
      "the round is still starting {} after it began (--start-timeout {}): {} {} neither printed "
      "a line nor connected to the store at {}; this is not a hang (--hang-timeout counts only "
      "once every rank has started); if the start is only slow (importing from a slow "
      "filesystem, loading a checkpoint), give a longer --start-timeout, or 0 for no limit; "
      "reading the ranks' stacks before anything is stopped",
      seconds_text(timeout_s), seconds_text(timeout_s), ranks_text(starting),
      starting.size() == 1 ? "has" : "have", round_.store);
  if (!reader_.tool().path && !reader_.tool().told_missing) {
    reader_.tool().told_missing = true;
    spdlog::warn("{}", doctor::missing_tool_hint());
  }
  reading_ = true;
  reader_.read(live_targets(gang_), k_start_read_limit,
               [this, starting](const std::vector<RankStacks>& ranks) {
                 reading_ = false;
                 if (over_) return reading_ended_();
                 after_read(ranks, starting);
               });
}

void StartWatch::after_read(const std::vector<RankStacks>& ranks,
                            const std::vector<int>& starting) {
  const double timeout_s = *plan_.doctor.start_timeout_s;
  const config::OnHang action = plan_.doctor.on_hang;
  std::vector<int> importing = importing_ranks(ranks, starting);
  nlohmann::json stacks = reader_.tell(
      ranks, "start-stacks.txt",
      "where the ranks are, the odd ones out first:", importing_line(importing, starting.size()));
  found_ = report::StartTimeoutFinding{.timeout_s = timeout_s,
                                       .action = action == config::OnHang::report    ? "report"
                                                 : action == config::OnHang::restart ? "restart"
                                                                                     : "stop",
                                       .starting = starting,
                                       .importing = std::move(importing),
                                       .stacks = std::move(stacks)};
  switch (action) {
    case config::OnHang::report:
      spdlog::warn("--on-hang report: the workers go on starting; reporting again in {}",
                   seconds_text(timeout_s));
      next_report_at_ = Clock::now() + steady(timeout_s);
      return;
    case config::OnHang::stop:
      spdlog::warn("--on-hang stop: stopping the workers, still starting (gangrun exits with {})",
                   exit_codes::k_hang);
      return stop_hung_();
    case config::OnHang::restart:
      spdlog::warn(
          "--on-hang restart: stopping the workers, still starting (they start again while "
          "--max-restarts allows)");
      return stop_hung_();
  }
}

}  // namespace gangrun::doctor
