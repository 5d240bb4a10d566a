#include "doctor/watch/gang_doctor.hpp"

#include "doctor/stack_tool.hpp"
#include "doctor/store_peers.hpp"
#include "doctor/watch/arrival_check.hpp"
#include "doctor/watch/failure_stacks.hpp"
#include "doctor/watch/straggler_sampler.hpp"
#include "util/env.hpp"
#include "util/exit_codes.hpp"
#include "util/signals.hpp"
#include "util/strings.hpp"
#include "util/temp_dir.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace gangrun::doctor {

namespace {

// A hang's stacks may take a while on a loaded machine: nothing waits for
// them but the hang's own action (a failure's come at once: k_failure_read_limit).
constexpr std::chrono::milliseconds k_hang_read_limit{5000};
// Across nodes, how much longer than its own reading a node waits for the
// others' answers: their requests arrive a little later than its own.
constexpr std::chrono::milliseconds k_answer_margin{2000};

// How often a node tells the lead its silence (and the lead reads the
// others'): a hang is declared at most this late.
std::chrono::milliseconds silence_tick(double timeout_s) {
  auto quarter = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 250));
  return std::clamp(quarter, std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
}

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

}  // namespace

GangDoctor::GangDoctor(boost::asio::io_context& io, supervise::Spawner& spawner,
                       const launch::LaunchPlan& plan, supervise::Gang& gang, StopHandler stop_hung,
                       std::optional<DoctorLink::Settings> nodes, const store::Server* store)
    : plan_(plan),
      gang_(gang),
      stop_hung_(std::move(stop_hung)),
      store_server_(store),
      reader_(io, spawner, plan),
      silence_timer_(io),
      dump_wait_(io) {
  const launch::DoctorPlan& settings = plan.doctor;
  // A node of several answers `gangrun stacks` asked on any of them.
  if (settings.hang_timeout_s || settings.stacks_at_failure || settings.straggler_interval_s ||
      nodes) {
    std::optional<std::string> interpreter_dir;
    if (plan.program.interpreter) {
      interpreter_dir =
          std::filesystem::path(plan.program.interpreter->path).parent_path().string();
    }
    reader_.tool().path =
        doctor::find_stack_tool(settings.stack_tool, interpreter_dir, plan.host_env);
  }
  if (env_lookup(plan.host_env, "TORCHELASTIC_ENABLE_FILE_TIMER") == "1") {
    // torchrun's agent names the pipe when the user did not (and tells the workers).
    std::string path = env_lookup(plan.host_env, "TORCHELASTIC_TIMER_FILE")
                           .value_or(temp_dir(plan.host_env) + "/watchdog_timer_gangrun_" +
                                     std::to_string(::getpid()));
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
    watch_.emplace(
        io, steady(*settings.hang_timeout_s), [this] { return hang_watch_workers(); },
        [this](HangWatch::Clock::duration silent_for) { on_hang(silent_for); });
  }
  if (nodes) {
    link_ = std::make_unique<DoctorLink>(
        io, std::move(*nodes), [this](std::int64_t number, const doctor::NodeRequest& request) {
          on_node_request(number, request);
        });
  }
  add_watches(io, spawner);
}

void GangDoctor::add_watches(boost::asio::io_context& io, supervise::Spawner& spawner) {
  const launch::DoctorPlan& settings = plan_.doctor;
  if (settings.stacks_at_failure) {
    watches_.push_back(
        std::make_unique<FailureStacks>(plan_, gang_, reader_, [this] { deliver_if_over(); }));
  }
  if (settings.arrival_timeout_s) {
    watches_.push_back(std::make_unique<ArrivalCheck>(io, plan_, gang_, store_server_));
  }
  if (settings.straggler_interval_s) {
    watches_.push_back(std::make_unique<StragglerSampler>(io, spawner, plan_, gang_, reader_.tool(),
                                                          [this] { deliver_if_over(); }));
  }
  if (settings.flight_recorder) {
    auto recorder = std::make_unique<FlightRecorder>(plan_.host_env);
    recorder_ = recorder.get();
    watches_.push_back(std::move(recorder));
  }
}

std::vector<supervise::Gang::LiveWorker> GangDoctor::hang_watch_workers() const {
  std::vector<supervise::Gang::LiveWorker> workers = live_workers();
  // A worker's request to the store, as one more worker that spoke then.
  if (auto request = store_server_ ? store_server_->last_round_request() : std::nullopt) {
    workers.push_back({.rank = -1, .local_rank = -1, .pid = 0, .last_line_at = request});
  }
  if (!nodes_) return workers;
  // The other nodes, each as one worker that last spoke when its node did;
  // a node that has not told counts as speaking now.
  for (const std::string& id : link_->others()) {
    auto told = node_progress_.find(id);
    workers.push_back(
        {.rank = -1,
         .local_rank = -1,
         .pid = 0,
         .last_line_at = told == node_progress_.end() ? HangWatch::Clock::now() : told->second});
  }
  return workers;
}

void GangDoctor::round_started(std::optional<std::string> attempt_dir, std::string store,
                               std::optional<NodeRound> nodes) {
  nodes_ = link_ ? std::move(nodes) : std::nullopt;
  node_progress_.clear();
  round_start_ = HangWatch::Clock::now();
  if (nodes_) link_->round_started(nodes_->round, nodes_->members, nodes_->job_nonce);
  hang_ask_.clear();
  reader_.round_started(std::move(attempt_dir));
  store_ = std::move(store);
  hang_acted_ = false;
  round_over_ = false;
  round_goes_on_ = static_cast<bool>(nodes_);
  findings_ = {};
  if (file_timers_) file_timers_->clear();
  if (watch_ && watches_whole_gang()) watch_->start();
  if (watch_ && nodes_) exchange_silence();
  for (const std::unique_ptr<Watch>& watch : watches_) {
    watch->round_started({.store = store_, .at = round_start_});
  }
}

std::set<pid_t> GangDoctor::supervisor_pids() const {
  std::set<pid_t> pids = reader_.supervisor_pids();
  for (const std::unique_ptr<Watch>& watch : watches_) pids.merge(watch->supervisor_pids());
  return pids;
}

EnvMap GangDoctor::worker_env(const std::string& attempt_path) {
  EnvMap env;
  if (file_timers_) env["TORCHELASTIC_TIMER_FILE"] = file_timers_->path();
  if (recorder_) env.merge(recorder_->worker_env(attempt_path));
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

// ---- a hang -------------------------------------------------------------------

void GangDoctor::on_hang(HangWatch::Clock::duration silent_for) {
  std::vector<StackTarget> targets = live_targets(gang_);
  if (!watching() || reader_.running() || (targets.empty() && !nodes_)) return;
  double silent_s = static_cast<double>(
                        std::chrono::duration_cast<std::chrono::milliseconds>(silent_for).count()) /
                    1000.0;
  std::string where = nodes_ ? fmt::format("rank on the {} nodes", nodes_->members.size())
                             : fmt::format("of the {} running ranks", targets.size());
  spdlog::warn(
      "no rank made progress for {} (--hang-timeout {}): no output line from any {}; reading "
      "their stacks before anything is stopped",
      seconds_text(silent_s), seconds_text(*plan_.doctor.hang_timeout_s), where);
  if (!reader_.tool().path && !reader_.tool().told_missing) {
    reader_.tool().told_missing = true;
    spdlog::warn("{}", doctor::missing_tool_hint());
  }
  if (nodes_) {
    // Every node reads its own ranks, this one too, when the request comes.
    hang_ask_ =
        link_->ask({.why = doctor::NodeRequest::Why::hang, .silent_for_s = silent_s, .ask_id = {}});
    return;
  }
  reader_.read(
      targets, k_hang_read_limit, [this, silent_s](const std::vector<doctor::RankStacks>& ranks) {
        StoreArrivals arrivals = store_arrivals(ranks, store_, runs_python(plan_));
        after_hang_read(ranks, silent_s,
                        "where the ranks are, the odd ones out first:", std::move(arrivals.missing),
                        arrivals.line);
      });
}

// ---- across nodes -------------------------------------------------------------

void GangDoctor::exchange_silence() {
  if (!nodes_ || !watching()) return;
  HangWatch::Clock::time_point now = HangWatch::Clock::now();
  if (nodes_->lead) {
    // A silence was told up to a tick before it is read: counted from the
    // reading, the lead declares a hang late, never early.
    link_->read_silences([this, now](const DoctorLink::ByAgent<std::chrono::milliseconds>& told) {
      if (!watching()) return;
      for (const auto& [id, silence] : told) {
        if (silence) {
          node_progress_[id] = now - *silence;
        } else {
          node_progress_.erase(id);
        }
      }
    });
  } else {
    HangWatch::Clock::time_point last = HangWatch::last_progress(round_start_, live_workers());
    link_->publish_silence(std::chrono::duration_cast<std::chrono::milliseconds>(now - last));
  }
  silence_timer_.expires_after(silence_tick(*plan_.doctor.hang_timeout_s));
  silence_timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error) exchange_silence();
  });
}

void GangDoctor::on_node_request(std::int64_t number, const doctor::NodeRequest& request) {
  // A node whose ranks are done still answers while the round goes on elsewhere: with no
  // ranks, at once, so that the asking side waits only for the nodes that have some.
  if (round_over_ && !round_goes_on_) return;
  if (reader_.running()) {
    spdlog::warn(
        "gang doctor: request {} came while this node's ranks were being read; the "
        "asking side goes without this node's",
        number);
    return;
  }
  bool hang = request.why == doctor::NodeRequest::Why::hang;
  // The lead's own hang: the only request anyone acts on.
  bool own_hang = hang && nodes_->lead && !hang_ask_.empty() && request.ask_id == hang_ask_;
  if (hang && !own_hang) {
    spdlog::warn(
        "the lead node reports a hang (the whole gang silent for {}): reading this node's "
        "ranks' stacks",
        seconds_text(request.silent_for_s));
  }
  auto answer = [this, number, hang, own_hang,
                 silent_s = request.silent_for_s](const std::vector<doctor::RankStacks>& ranks) {
    // Not known (no store port): none named.
    doctor::NodeAnswer mine{
        .ranks = ranks,
        .not_at_store =
            store_arrivals(ranks, store_, runs_python(plan_)).missing.value_or(std::vector<int>{})};
    link_->answer(number, mine);
    if (!hang || !watching()) return;
    if (!own_hang) {
      // Said here too; what follows is the lead's to decide (the round's end).
      return after_hang_read(
          mine.ranks, silent_s,
          "where this node's ranks are (the lead's console has every node's):", mine.not_at_store,
          not_at_store_line(mine.not_at_store, mine.ranks.size(), store_),
          /*act=*/false);
    }
    link_->collect(number, k_hang_read_limit + k_answer_margin,
                   [this, silent_s](const DoctorLink::ByAgent<doctor::NodeAnswer>& answers) {
                     after_nodes_read(answers, silent_s);
                   });
  };
  std::vector<StackTarget> targets = live_targets(gang_);
  if (targets.empty()) return answer({});
  reader_.read(targets, k_hang_read_limit, answer);
}

std::string GangDoctor::node_name_of(const std::string& agent_id) const {
  if (!nodes_) return agent_id;
  auto name = nodes_->names.find(agent_id);
  return name == nodes_->names.end() ? agent_id : name->second;
}

void GangDoctor::after_nodes_read(const DoctorLink::ByAgent<doctor::NodeAnswer>& answers,
                                  double silent_for_s) {
  if (!watching()) return deliver_if_over();
  std::vector<doctor::RankStacks> ranks;
  std::vector<int> missing;
  std::vector<std::string> unanswered;
  for (const auto& [id, answer] : answers) {
    if (!answer) {
      unanswered.push_back(node_name_of(id));
      continue;
    }
    ranks.insert(ranks.end(), answer->ranks.begin(), answer->ranks.end());
    missing.insert(missing.end(), answer->not_at_store.begin(), answer->not_at_store.end());
  }
  std::sort(
      ranks.begin(), ranks.end(),
      [](const doctor::RankStacks& a, const doctor::RankStacks& b) { return a.rank < b.rank; });
  std::sort(missing.begin(), missing.end());
  std::string line = not_at_store_line(missing, ranks.size(), store_);
  if (!unanswered.empty()) {
    if (!line.empty()) line += "\n  ";
    line += fmt::format(
        "no answer within {} from the agent{} on {}: their ranks are not above",
        seconds_text(std::chrono::duration<double>(k_hang_read_limit + k_answer_margin).count()),
        unanswered.size() == 1 ? "" : "s", strings::join(unanswered, "; "));
  }
  after_hang_read(ranks, silent_for_s, "where the ranks are, the odd ones out first:", missing,
                  line);
}

void GangDoctor::after_hang_read(const std::vector<doctor::RankStacks>& ranks, double silent_for_s,
                                 const std::string& heading,
                                 std::optional<std::vector<int>> not_at_store,
                                 const std::string& store_line, bool act) {
  const config::OnHang action = plan_.doctor.on_hang;
  nlohmann::json stacks = reader_.tell(ranks, "hang-stacks.txt", heading, store_line);
  findings_.hang = report::HangFinding{.timeout_s = *plan_.doctor.hang_timeout_s,
                                       .silent_for_s = silent_for_s,
                                       .action = on_hang_word(action),
                                       .not_at_store = std::move(not_at_store),
                                       .stacks = std::move(stacks),
                                       .flight_recorder_dumps = std::nullopt};
  if (!act) {
    // The lead acts for the whole gang; this node's record says what the job does.
    hang_acted_ = action != config::OnHang::report;
    return;
  }
  if (round_over_) {
    // The lead's own ranks are done, the others' hung: stop_hung_ tells the
    // coordinator, which ends the round on every node. Else the round ended
    // (a signal, a failure) before --on-hang could act.
    if (!watches_others_after_end()) return deliver_if_over();
    if (action == config::OnHang::report) {
      watch_->watch_again();
      return deliver_if_over();
    }
    hang_acted_ = true;
    stop_hung_();
    return deliver_if_over();
  }
  int asked = recorder_ ? recorder_->request_dumps() : 0;
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
      static_cast<int>(recorder_->dumps().size()) < dumps_asked &&
      HangWatch::Clock::now() - asked_at < k_dump_wait) {
    dump_wait_.expires_after(k_dump_poll);
    dump_wait_.async_wait([this, dumps_asked, asked_at](const boost::system::error_code& error) {
      if (!error) act_on_hang(dumps_asked, asked_at);
    });
    return;
  }
  if (round_over_) return deliver_if_over();
  if (dumps_asked > 0 && findings_.hang) {
    findings_.hang->flight_recorder_dumps = recorder_->dumps();
  }
  const config::OnHang action = plan_.doctor.on_hang;
  hang_acted_ = true;
  switch (action) {
    case config::OnHang::report:
      spdlog::warn("--on-hang report: the workers go on; watching for the next {} of silence",
                   seconds_text(*plan_.doctor.hang_timeout_s));
      if (watch_ && watches_whole_gang()) watch_->watch_again();
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
  report::TimerExpiredFinding timer{.rank = *rank,
                                    .pid = expired.pid,
                                    .scope_id = expired.scope_id,
                                    .signal = expired.signal,
                                    .stacks = std::nullopt};
  if (reader_.running()) {
    findings_.timer_expired = std::move(timer);
    return act();
  }
  reader_.read(live_targets(gang_), k_failure_read_limit,
               [this, act, timer](const std::vector<doctor::RankStacks>& ranks) mutable {
                 timer.stacks = reader_.tell(ranks, "timer-stacks.txt",
                                             "where the ranks were when the timer expired:");
                 findings_.timer_expired = std::move(timer);
                 if (round_over_) return deliver_if_over();
                 act();
               });
}

// ---- a failure ----------------------------------------------------------------

void GangDoctor::worker_failed() {
  if (watch_) watch_->stop();  // the round is ending: a failure, not a hang
  for (const std::unique_ptr<Watch>& watch : watches_) watch->worker_failed();
}

// ---- the round's end ------------------------------------------------------------

void GangDoctor::round_ended(std::function<void(Findings)> then) {
  round_over_ = true;
  // While the round goes on elsewhere, the lead keeps watching the other nodes (else a
  // rank hung there would be watched by nobody), and every node keeps answering.
  if (!watches_others_after_end()) {
    if (watch_) watch_->stop();
    silence_timer_.cancel();
  }
  if (link_ && !round_goes_on_) link_->round_ended();
  for (const std::unique_ptr<Watch>& watch : watches_) watch->round_ended();
  dump_wait_.cancel();
  after_reading_ = std::move(then);
  deliver_if_over();
}

void GangDoctor::gang_round_ended() {
  if (!round_goes_on_) return;
  round_goes_on_ = false;
  if (round_over_) {
    if (watch_) watch_->stop();
    silence_timer_.cancel();
    if (link_) link_->round_ended();
  }
}

void GangDoctor::deliver_if_over() {
  if (!round_over_ || !after_reading_ || reader_.running()) return;
  for (const std::unique_ptr<Watch>& watch : watches_) {
    if (watch->reading()) return;
  }
  for (const std::unique_ptr<Watch>& watch : watches_) watch->add_findings(findings_);
  // The round ended (a signal, a failure) before --on-hang could act.
  if (findings_.hang && !hang_acted_) findings_.hang->action = "none";
  std::function<void(Findings)> then = std::move(after_reading_);
  after_reading_ = nullptr;
  then(std::move(findings_));
  findings_ = {};
}

}  // namespace gangrun::doctor
