#include "doctor/watch/gang_doctor.hpp"

#include "doctor/stack_tool.hpp"
#include "doctor/watch/arrival_check.hpp"
#include "doctor/watch/failure_stacks.hpp"
#include "doctor/watch/start_watch.hpp"
#include "doctor/watch/straggler_sampler.hpp"
#include "util/env.hpp"

#include <filesystem>

namespace gangrun::doctor {

GangDoctor::GangDoctor(boost::asio::io_context& io, supervise::Spawner& spawner,
                       const launch::LaunchPlan& plan, supervise::Gang& gang, StopHandler stop_hung,
                       std::optional<DoctorLink::Settings> nodes, const store::Server* store)
    : plan_(plan), gang_(gang), store_server_(store), reader_(io, spawner, plan) {
  const launch::DoctorPlan& settings = plan.doctor;
  // A node of several answers `gangrun stacks` asked on any of them.
  if (settings.hang_timeout_s || settings.start_timeout_s || settings.stacks_at_failure ||
      settings.straggler_interval_s || nodes) {
    std::optional<std::string> interpreter_dir;
    if (plan.program.interpreter) {
      interpreter_dir =
          std::filesystem::path(plan.program.interpreter->path).parent_path().string();
    }
    reader_.tool().path =
        doctor::find_stack_tool(settings.stack_tool, interpreter_dir, plan.host_env);
  }
  round_.hang_watched = settings.hang_timeout_s.has_value();
  if (nodes) {
    link_ = std::make_unique<DoctorLink>(
        io, std::move(*nodes), [this](std::int64_t number, const doctor::NodeRequest& request) {
          // A snapshot, no stack: cheap enough to answer every second.
          if (request.why == NodeRequest::Why::status) {
            if (status_json_) link_->answer_status(number, status_json_());
            return;
          }
          hang_->on_node_request(number, request);
        });
  }
  add_watches(io, spawner, std::move(stop_hung));
  if (link_ && settings.hang_timeout_s) {
    silences_.emplace(
        io,
        SilenceExchange::Channel{
            .tell = [this](std::chrono::milliseconds silent) { link_->publish_silence(silent); },
            .read =
                [this](std::function<void(SilenceExchange::Silences)> done) {
                  link_->read_silences(std::move(done));
                }},
        SilenceExchange::tick_for(*settings.hang_timeout_s), round_, [this] {
          HangWatch::Progress own;  // a node's own ranks: no store, no other node
          own.workers = worker_progress();
          // A node whose ranks still start is not silent: the lead waits for its start.
          if (start_) {
            own.starting = start_->starting();
            own.started_at = start_->ended_at();
          }
          return own.told(round_.start, HangWatch::Clock::now());
        });
  }
}

void GangDoctor::add_watches(boost::asio::io_context& io, supervise::Spawner& spawner,
                             StopHandler stop_hung) {
  const launch::DoctorPlan& settings = plan_.doctor;
  if (env_lookup(plan_.host_env, "TORCHELASTIC_ENABLE_FILE_TIMER") == "1") {
    if (auto timers =
            FileTimerWatch::open(io, plan_, gang_, reader_, [this] { deliver_if_over(); })) {
      file_timers_ = timers.get();
      watches_.push_back(std::move(timers));
    }
  }
  if (settings.stacks_at_failure) {
    watches_.push_back(
        std::make_unique<FailureStacks>(plan_, gang_, reader_, [this] { deliver_if_over(); }));
  }
  // The hang watch leaves the start to it, with or without a limit of its own.
  if (settings.hang_timeout_s || settings.start_timeout_s) {
    auto start = std::make_unique<StartWatch>(io, plan_, gang_, reader_, stop_hung,
                                              [this] { deliver_if_over(); });
    start_ = start.get();
    watches_.push_back(std::move(start));
  }
  if (settings.arrival_timeout_s) {
    watches_.push_back(std::make_unique<ArrivalCheck>(io, plan_, gang_, store_server_));
  }
  if (settings.straggler_interval_s) {
    watches_.push_back(std::make_unique<StragglerSampler>(io, spawner, plan_, gang_, reader_.tool(),
                                                          [this] { deliver_if_over(); }));
  }
  FlightRecorder* recorder = nullptr;
  if (settings.flight_recorder) {
    auto made = std::make_unique<FlightRecorder>(plan_.host_env);
    recorder = made.get();
    watches_.push_back(std::move(made));
  }
  // Across nodes every node answers the others' requests, `gangrun stacks`' too.
  if (settings.hang_timeout_s || link_) {
    auto hang = std::make_unique<HangResponse>(
        io,
        HangResponse::Parts{.plan = plan_,
                            .gang = gang_,
                            .reader = reader_,
                            .round = round_,
                            .link = link_.get(),
                            .recorder = recorder},
        [this] { return hang_progress(); }, std::move(stop_hung), [this] { deliver_if_over(); },
        [this](HangWatch::Clock::duration silent_for) {
          if (start_) start_->tell_silent_while_starting(silent_for);
        });
    hang_ = hang.get();
    watches_.push_back(std::move(hang));
  }
}

std::vector<HangWatch::Clock::time_point> GangDoctor::worker_progress() const {
  std::vector<HangWatch::Clock::time_point> progress;
  for (const supervise::Gang::LiveWorker& worker : gang_.live_worker_list()) {
    if (worker.last_line_at) progress.push_back(*worker.last_line_at);
    if (!file_timers_) continue;
    if (auto request = file_timers_->last_request_from(worker.pid)) progress.push_back(*request);
  }
  return progress;
}

HangWatch::Progress GangDoctor::hang_progress() const {
  HangWatch::Progress progress;
  progress.workers = worker_progress();
  if (store_server_) progress.store_request = store_server_->last_round_request();
  if (start_) {
    progress.starting = start_->starting();
    progress.started_at = start_->ended_at();
  }
  if (round_.nodes && silences_) {
    progress.other_nodes = silences_->others_progress(link_->others(), HangWatch::Clock::now());
  }
  return progress;
}

void GangDoctor::round_started(std::optional<std::string> attempt_dir, std::string store,
                               std::optional<NodeRound> nodes) {
  round_.nodes = link_ ? std::move(nodes) : std::nullopt;
  round_.start = HangWatch::Clock::now();
  if (round_.nodes) {
    link_->round_started(round_.nodes->round, round_.nodes->members, round_.nodes->job_nonce);
  }
  reader_.round_started(std::move(attempt_dir));
  round_.store = std::move(store);
  round_.over = false;
  round_.goes_on = round_.nodes.has_value();
  // The hang watch (in watches_) starts before the silences are first told or read.
  for (const std::unique_ptr<Watch>& watch : watches_) {
    watch->round_started({.store = round_.store, .at = round_.start});
  }
  if (silences_) silences_->round_started();
}

std::set<pid_t> GangDoctor::supervisor_pids() const {
  std::set<pid_t> pids = reader_.supervisor_pids();
  for (const std::unique_ptr<Watch>& watch : watches_) pids.merge(watch->supervisor_pids());
  return pids;
}

EnvMap GangDoctor::worker_env(const std::string& attempt_path) {
  EnvMap env;
  for (const std::unique_ptr<Watch>& watch : watches_) env.merge(watch->worker_env(attempt_path));
  return env;
}

void GangDoctor::worker_failed() {
  for (const std::unique_ptr<Watch>& watch : watches_) watch->worker_failed();
}

void GangDoctor::round_ended(std::function<void(Findings)> then) {
  round_.over = true;
  // While the round goes on elsewhere, the lead keeps watching the other nodes (else a
  // rank hung there would be watched by nobody), and every node keeps answering.
  if (silences_ && !round_.watches_others_after_end()) silences_->stop();
  if (link_ && !round_.goes_on) link_->round_ended();
  for (const std::unique_ptr<Watch>& watch : watches_) watch->round_ended();
  after_reading_ = std::move(then);
  deliver_if_over();
}

void GangDoctor::gang_round_ended() {
  if (!round_.goes_on) return;
  round_.goes_on = false;
  if (round_.over) {
    if (hang_) hang_->gang_round_ended();
    if (silences_) silences_->stop();
    if (link_) link_->round_ended();
  }
}

void GangDoctor::deliver_if_over() {
  if (!round_.over || !after_reading_ || reader_.running()) return;
  for (const std::unique_ptr<Watch>& watch : watches_) {
    if (watch->reading()) return;
  }
  Findings findings;
  for (const std::unique_ptr<Watch>& watch : watches_) watch->add_findings(findings);
  std::function<void(Findings)> then = std::move(after_reading_);
  after_reading_ = nullptr;
  then(std::move(findings));
}

LiveMarks GangDoctor::marks() const {
  LiveMarks marks;
  for (const auto& watch : watches_) watch->add_marks(marks);
  return marks;
}

}  // namespace gangrun::doctor
