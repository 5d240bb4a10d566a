#include "agent/node_agent.hpp"

#include "agent/agent_signals.hpp"
#include "agent/agent_store.hpp"
#include "agent/attempt_record.hpp"
#include "agent/interpreter_probe.hpp"
#include "agent/node_link.hpp"
#include "agent/node_status_source.hpp"
#include "agent/rank_gpus.hpp"
#include "agent/rendezvous_setup.hpp"
#include "agent/restart_policy.hpp"
#include "agent/round_record.hpp"
#include "agent/round_start.hpp"
#include "agent/run_summary.hpp"
#include "doctor/job_registry.hpp"
#include "doctor/watch/gang_doctor.hpp"
#include "launch/dialects/deepspeed_pid_file.hpp"
#include "launch/run_directory.hpp"
#include "logging/logging.hpp"
#include "logmux/console.hpp"
#include "observe/metrics_text.hpp"
#include "supervise/gang.hpp"
#include "supervise/shim_spawner.hpp"
#include "util/exit_codes.hpp"
#include "util/open_file_limit.hpp"
#include "util/temp_dir.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <csignal>
#include <optional>
#include <set>

namespace gangrun::agent {
namespace asio = boost::asio;

const char* to_string(AgentState state) {
  switch (state) {
    case AgentState::starting:
      return "starting";
    case AgentState::running:
      return "running";
    case AgentState::stopping:
      return "stopping";
    case AgentState::restarting:
      return "restarting";
    case AgentState::done:
      return "done";
  }
  return "unknown";
}

namespace {

// One run on this node. After start(), everything happens in handlers on
// io_, turned by run() until the state is done. It holds the run's state
// and carries out what its parts decide: what follows a round
// (restart_policy.hpp), what a signal means (agent_signals.hpp), a round's
// launches (round_start.hpp) and record (round_record.hpp), the report
// (run_summary.hpp), and on many nodes the others' word (node_link.hpp).
class NodeAgent {
 public:
  NodeAgent(const launch::LaunchPlan& plan, const SpawnerFactory& make_spawner)
      : plan_(plan), spawner_(make_spawner(io_)) {}

  RunResult run() {
    if (auto started = start(); !started) {
      spdlog::error("{}", started.error().describe());
      return {started.error().exit_code(), std::nullopt};
    }
    asio::post(io_, [this] {
      if (link_) {
        link_->join();
      } else {
        begin_round(0);
      }
    });
    while (state_ != AgentState::done) {
      if (io_.run_one() == 0) break;  // nothing left to wait for: cannot happen while armed
    }
    record_.exit_code = result_.exit_code;
    record_.gangrun_signal = result_.die_by_signal;
    record_.ended_at = std::chrono::system_clock::now();
    // The summary comes after every line the workers wrote.
    logging_through_console_->end();
    return report_run(plan_, record_, result_, job_outcome_, agent_id(), stopped_for_round_end_);
  }

 private:
  // ---- starting -----------------------------------------------------------------

  // The store every worker meets through (node 0 hosts it, on this loop,
  // for the whole run; on many nodes, the rendezvous' host), the link to the
  // other nodes, the run directory, then the components of a round.
  Expected<void> start() {
    master_port_ = plan_.master_port ? std::to_string(*plan_.master_port) : "";
    if (plan_.multi_node) {
      GANGRUN_TRY_ASSIGN(hosted, host_rendezvous_store(io_, plan_));
      store_ = std::move(*hosted);
      link_.emplace(io_, plan_, store_.get(), link_events());
    } else if (plan_.node_rank == 0) {
      GANGRUN_TRY_ASSIGN(started, start_agent_store(io_, plan_));
      store_ = std::move(*started);
      master_port_ = std::to_string(store_->port());
    }
    GANGRUN_TRY_ASSIGN(run_dir, launch::RunDirectory::create(
                                    plan_.log_dir, temp_dir(plan_.host_env), plan_.run_id));
    run_dir_.emplace(std::move(*run_dir));
    if (!run_dir_->temporary()) spdlog::info("logs of this run: {}", run_dir_->path());
    record_ = new_run_record(
        plan_, run_dir_->temporary() ? std::nullopt : std::optional<std::string>(run_dir_->path()));

    logging_through_console_.emplace(console_);
    supervise::GangSettings settings = gang_settings(plan_);
    settings.on_failure = [this](const supervise::AttemptOutcome& so_far) {
      doctor_->worker_failed();
      if (!in_job()) return;
      failed_here_ = true;
      link_->report_failure(so_far);
    };
    gang_.emplace(io_, console_, *spawner_, settings);
    doctor_.emplace(
        io_, *spawner_, plan_, *gang_, [this] { stop_hung(); },
        link_ ? std::optional(doctor_link_settings(plan_, link_->agent_id())) : std::nullopt,
        store_.get());
    // `gangrun top` asks through the store for the same snapshot.
    gpus_ = gpu_sampler_for(plan_);
    doctor_->serve_status([this] { return observe::to_json(node_status()).dump(); });
    signals_.emplace(io_, plan_.teardown_signals,
                     SignalHandlers{.teardown = [this](int signal) { on_teardown_signal(signal); },
                                    .child_ended = [this] { reap_strays(); },
                                    .forward = [this](int signal) { gang_->forward(signal); }});
    GANGRUN_TRY(serve_metrics());
    // Lets `gangrun stacks` (and a scraper) find this job from another terminal.
    if (auto registered =
            register_job(plan_, record_.log_dir,
                         metrics_ ? std::optional(metrics_->endpoint()) : std::nullopt)) {
      registration_.emplace(std::move(*registered));
      if (!plan_.multi_node) write_status_while_wanted();
    }
    return {};
  }

  // A job of one node has no store request for `gangrun top`: its snapshot
  // goes to a file beside the job's entry (doctor/job_registry.hpp) every
  // second while top wants it. A job of several nodes answers through the
  // store only, one path each.
  void write_status_while_wanted() {
    if (registration_->status_wanted()) {
      if (auto written = registration_->write_status(
              observe::to_json(node_status())
                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
          !written) {
        spdlog::debug("{}", written.error().describe());
      }
    }
    status_timer_.expires_after(std::chrono::seconds(1));
    status_timer_.async_wait([this](const boost::system::error_code& error) {
      if (!error && state_ != AgentState::done) write_status_while_wanted();
    });
  }

  // --metrics-addr: /metrics and /healthz on this loop, from the node's
  // snapshot (node_status_source.hpp).
  Expected<void> serve_metrics() {
    if (!plan_.metrics_address) return {};
    observe::MetricsSources sources{
        .metrics = [this] { return observe::metrics_text(node_status()); },
        .health = [this] { return agent_health(state_); }};
    GANGRUN_TRY_ASSIGN(
        server, observe::MetricsServer::start(
                    io_, {.host = plan_.metrics_address->host, .port = plan_.metrics_address->port},
                    std::move(sources)));
    metrics_ = std::move(*server);
    spdlog::info("metrics of this node: http://{}/metrics (liveness: /healthz)",
                 metrics_->endpoint());
    return {};
  }

  observe::NodeStatus node_status() const {
    observe::NodeStatus status = collect_node_status({.plan = plan_,
                                                      .state = state_,
                                                      .counters = counters_,
                                                      .gang = *gang_,
                                                      .doctor = *doctor_,
                                                      .store = store_.get()});
    add_gpu_usage(status, gpus_.get(), plan_);
    return status;
  }

  NodeLinkEvents link_events() {
    return {.round_assigned = [this](const AssignedRound& round) { on_round_assigned(round); },
            .round_ending = [this](const rendezvous::RoundEnd& end) { on_round_ending(end); },
            .job_done = [this](const rendezvous::JobOutcome& outcome) { on_job_done(outcome); },
            .store_lost = [this](const Error& error) { on_store_lost(error); },
            .refused = [this](const Error& error) { on_refused(error); }};
  }

  // Joined the other nodes, and not left yet.
  bool in_job() const { return link_ && link_->joined(); }
  std::string agent_id() const { return link_ ? link_->agent_id() : ""; }

  // --on-hang stop or restart. On many nodes only the lead acts, and its own
  // workers may be done already: then the coordinator hears of the hang as
  // this node's failure and ends the round on every node.
  void stop_hung() {
    if (gang_->running() || !in_job()) return gang_->stop_hung();
    link_->report_hang();
  }

  void set_state(AgentState next) {
    spdlog::debug("agent: {} -> {}", to_string(state_), to_string(next));
    state_ = next;
  }

  // ---- rounds -----------------------------------------------------------------

  // A single node's round: its own assignment.
  void begin_round(int restart_count) {
    // Keys of one round must not reach the next: 1.13 workers prefix their
    // keys with the restart count, newer ones do not. The store keeps every
    // connection (on many nodes, other agents stay connected).
    if (restart_count > 0 && store_) store_->begin_round(static_cast<std::uint64_t>(restart_count));
    begin_assigned_round(launch::static_assignment(plan_, restart_count, master_port_));
  }

  void on_round_assigned(const AssignedRound& round) {
    record_.node = round.node_name;
    node_round_ = round.nodes;
    network_env_ = round.network_env;
    begin_assigned_round(round.assignment);
  }

  void begin_assigned_round(const launch::RoundAssignment& round) {
    auto prepared = run_dir_->prepare_attempt(round.attempt, plan_.local_world_size);
    if (!prepared) {
      spdlog::error("{}", prepared.error().describe());
      result_.exit_code = prepared.error().exit_code();
      // The other nodes learn it from this agent's closed connection.
      if (link_) link_->leave();
      set_state(AgentState::done);
      return;
    }
    stopped_for_round_end_ = false;
    failed_here_ = false;
    ++counters_.rounds;
    counters_.restarts = round.restart_count;
    counters_.nodes_in_round = round.group_world_size;
    counters_.node_rank = round.group_rank;
    counters_.node = record_.node.value_or("");
    counters_.round_started_at = std::chrono::steady_clock::now();
    set_state(stop_signal_ ? AgentState::stopping : AgentState::running);
    const std::string attempt_path = run_dir_->attempt_path(round.attempt);
    gang_->start(
        round_launches(plan_, round, run_dir_->path(), doctor_->worker_env(attempt_path),
                       network_env_),
        [this, round](const supervise::AttemptOutcome& outcome) { on_round_done(round, outcome); });
    doctor_->round_started(
        run_dir_->temporary() ? std::nullopt : std::optional<std::string>(attempt_path),
        round_store_endpoint(round), node_round_);
    // A teardown signal that came between rounds ends this one before any
    // worker starts.
    if (stop_signal_) gang_->stop(*stop_signal_);
  }

  void on_round_done(const launch::RoundAssignment& round,
                     const supervise::AttemptOutcome& outcome) {
    record_.attempts.push_back(to_record(outcome, round.attempt, *run_dir_));
    complete_last_attempt(
        plan_, record_, probe_,
        [this](std::function<void(report::DoctorFindings)> then) {
          doctor_->round_ended(std::move(then));
        },
        [this, round, outcome] { after_round(round, outcome); });
  }

  void after_round(const launch::RoundAssignment& round, const supervise::AttemptOutcome& outcome) {
    if (plan_.multi_node) return on_node_round_done(outcome);
    AfterRound next =
        after_single_node_round(plan_, round.restart_count, outcome,
                                record_.attempts.back().doctor.start_timeout.has_value());
    switch (next.kind) {
      case AfterRound::Kind::hung_out:
        result_.exit_code = exit_codes::k_hang;
        return set_state(AgentState::done);
      case AfterRound::Kind::finish:
        result_ = finished_result(result_, record_.attempts.back());
        return set_state(AgentState::done);
      case AfterRound::Kind::restart:
        spdlog::warn("{}", next.warning);
        set_state(AgentState::restarting);
        asio::post(io_, [this, count = round.restart_count + 1] { begin_round(count); });
        return;
    }
  }

  // ---- many nodes ---------------------------------------------------------------

  // This node's workers ended: the coordinator decides what comes next.
  void on_node_round_done(const supervise::AttemptOutcome& outcome) {
    if (lost_store_ || !in_job()) return finish_lost_store();
    set_state(AgentState::restarting);
    link_->report_result(outcome, stopped_for_round_end_);
  }

  void on_round_ending(const rendezvous::RoundEnd& end) {
    if (doctor_) doctor_->gang_round_ended();
    // Its own failure: the coordinator has gathered every node's, and the
    // workers still running here are stopped now.
    if (failed_here_) return gang_->close_failure_window();
    // Already ending by itself: a signal.
    if (!gang_->running() || state_ == AgentState::stopping) return;
    if (end.reason != rendezvous::EndReason::success) {
      spdlog::warn("stopping this node's workers: {}", end.message);
    }
    stopped_for_round_end_ = true;
    gang_->stop(SIGTERM);
  }

  void on_job_done(const rendezvous::JobOutcome& outcome) {
    if (doctor_) doctor_->gang_round_ended();
    job_outcome_ = outcome;
    report::AttemptRecord* last = record_.attempts.empty() ? nullptr : &record_.attempts.back();
    JobEndHere end = job_end_here(result_, outcome, link_->agent_id(), stop_signal_, last,
                                  stopped_for_round_end_);
    result_ = end.result;
    if (last) blame_as_told(outcome, *last);
    for (const std::string& error : end.errors) spdlog::error("{}", error);
    // Leaving closes this agent's connections: the coordinator counts it out.
    link_->leave();
    // The store stays up until every agent has read the outcome.
    link_->when_everyone_answered([this] { set_state(AgentState::done); });
  }

  void on_store_lost(const Error& error) {
    spdlog::error("lost the rendezvous store at {}: {}", rendezvous_endpoint(plan_),
                  error.message());
    lost_store_ = true;
    link_->leave();
    result_.exit_code = k_lost_rendezvous;
    if (gang_->running()) {
      stopped_for_round_end_ = true;
      gang_->stop(SIGTERM);
      return;
    }
    finish_lost_store();
  }

  // Runs inside the participant's own callback, like the handlers above:
  // once it has left, only members of this object are touched.
  void on_refused(const Error& error) {
    spdlog::error("{}", error.message());
    result_.exit_code = error.exit_code();
    link_->leave();
    set_state(AgentState::done);
  }

  void finish_lost_store() {
    result_.exit_code = lost_store_code(record_, failed_here_);
    set_state(AgentState::done);
  }

  // ---- signals ----------------------------------------------------------------

  // Supervisors are reaped by their own handlers; anything else that ended
  // is a stray (a shim whose worker could not start, an orphan of a killed
  // shim). gangrun's own children are left alone: the gang's shims, the
  // interpreter probe's and the doctor's.
  void reap_strays() {
    std::set<pid_t> keep = gang_->supervisor_pids();
    keep.merge(probe_.supervisor_pids());
    keep.merge(doctor_->supervisor_pids());
    spawner_->reap_strays(keep);
  }

  void on_teardown_signal(int signal_number) {
    TeardownStep step = decide_teardown({.multi_node = plan_.multi_node,
                                         .gang_running = gang_->running(),
                                         .signalled_before = stop_signal_.has_value(),
                                         .state = state_,
                                         .live_workers = gang_->live_workers()},
                                        signal_number);
    if (!step.warning.empty()) spdlog::warn("{}", step.warning);
    switch (step.action) {
      case Teardown::leave_rendezvous:
        if (link_) link_->leave();
        result_.exit_code = exit_codes::for_signal(signal_number);
        result_.die_by_signal = signal_number;
        return set_state(AgentState::done);
      case Teardown::wait_for_round:
        stop_signal_ = signal_number;
        return;
      case Teardown::stop_workers:
        stop_signal_ = signal_number;
        set_state(AgentState::stopping);
        return gang_->stop(signal_number);
      case Teardown::kill_workers:
        return gang_->stop(signal_number);
      case Teardown::nothing:
        return;
    }
  }

  // Destroyed in reverse: the link to the other nodes first, then the
  // signals, the gang and its shims' handlers; the store and the loop last.
  const launch::LaunchPlan& plan_;
  asio::io_context io_;
  std::unique_ptr<store::Server> store_;
  std::string master_port_;
  std::optional<launch::RunDirectory> run_dir_;
  std::optional<doctor::Registration> registration_;  // while the run lasts
  report::RunRecord record_;
  logmux::Console console_;
  std::optional<logging::LoggingThroughConsole> logging_through_console_;
  std::unique_ptr<supervise::Spawner> spawner_;
  std::optional<supervise::Gang> gang_;
  InterpreterProbe probe_{io_, *spawner_};
  std::optional<doctor::GangDoctor> doctor_;  // made with the gang, which it watches
  // The round this node runs, on many nodes (agent/node_link.hpp).
  EnvMap network_env_;
  std::optional<doctor::GangDoctor::NodeRound> node_round_;
  std::optional<AgentSignals> signals_;
  AgentCounters counters_;
  std::unique_ptr<accel::GpuSampler> gpus_;          // a job with CUDA GPUs (rank_gpus.hpp)
  std::unique_ptr<observe::MetricsServer> metrics_;  // --metrics-addr
  std::optional<NodeLink> link_;                     // many nodes only
  asio::steady_timer status_timer_{io_};             // one node: the snapshot for top

  bool failed_here_ = false;            // this round's root cause is one of ours
  bool stopped_for_round_end_ = false;  // this round was stopped because another node ended it
  bool lost_store_ = false;
  std::optional<rendezvous::JobOutcome> job_outcome_;

  AgentState state_ = AgentState::starting;
  std::optional<int> stop_signal_;
  RunResult result_;
};

}  // namespace

RunResult run(const launch::LaunchPlan& plan) {
  return run(plan, [](asio::io_context& io) -> std::unique_ptr<supervise::Spawner> {
    return std::make_unique<supervise::ShimSpawner>(io);
  });
}

RunResult run(const launch::LaunchPlan& plan, const SpawnerFactory& make_spawner) {
  // A closed stdout must not kill the supervisor in the middle of a teardown.
  std::signal(SIGPIPE, SIG_IGN);
  open_file_limit::use_hard_limit();
  if (auto subreaper = supervise::become_subreaper(); !subreaper) {
    spdlog::warn("{}; descendants that escape their worker cannot be cleaned up",
                 subreaper.error().describe());
  }
  std::optional<launch::DeepspeedPidFile> pid_file;
  if (plan.dialects.deepspeed.save_pid) {
    auto written = launch::DeepspeedPidFile::write(static_cast<int>(::getpid()));
    if (!written) {
      spdlog::error("{}", written.error().describe());
      return {written.error().exit_code(), std::nullopt};
    }
    pid_file.emplace(std::move(*written));
  }
  NodeAgent agent(plan, make_spawner);
  return agent.run();
}

}  // namespace gangrun::agent
