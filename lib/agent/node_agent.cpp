#include "agent/node_agent.hpp"

#include "agent/agent_store.hpp"
#include "agent/attempt_record.hpp"
#include "agent/interpreter_probe.hpp"
#include "agent/launches.hpp"
#include "agent/rendezvous_setup.hpp"
#include "agent/round_network.hpp"
#include "doctor/job_registry.hpp"
#include "doctor/watch/gang_doctor.hpp"
#include "launch/dialects/deepspeed_pid_file.hpp"
#include "launch/dry_run.hpp"
#include "launch/run_directory.hpp"
#include "logging/logging.hpp"
#include "logmux/console.hpp"
#include "rendezvous/messages.hpp"
#include "rendezvous/signing.hpp"
#include "report/blame.hpp"
#include "report/run_report.hpp"
#include "supervise/gang.hpp"
#include "supervise/shim_spawner.hpp"
#include "util/exit_codes.hpp"
#include "util/host.hpp"
#include "util/open_file_limit.hpp"
#include "util/signals.hpp"
#include "util/temp_dir.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <optional>

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

supervise::GangSettings gang_settings(const launch::LaunchPlan& plan) {
  supervise::GangSettings settings;
  settings.term_timeout = from_seconds(plan.term_timeout_s);
  settings.failure_window = from_seconds(plan.failure_window_s);
  if (plan.multi_node && settings.failure_window.count() > 0) {
    // The coordinator closes the window for every node at once (the round's
    // end); this node closes it by itself only if that word never comes.
    const config::RendezvousConf& conf = plan.rendezvous;
    settings.failure_window += from_seconds(conf.keep_alive_interval * conf.keep_alive_max_attempt);
  }
  return settings;
}

// The code of a job that lost its store, its node or its nodes.
constexpr int k_lost_rendezvous = exit_codes::k_store;

nlohmann::json job_record(const rendezvous::JobOutcome& outcome, const std::string& agent_id) {
  return nlohmann::json{{"exit_code", outcome.exit_code},
                        {"message", outcome.message},
                        {"root_cause_here", outcome.root_agent == agent_id},
                        {"root_cause_agent", outcome.root_agent}};
}

// One run on this node. After start(), everything happens in handlers on
// io_, turned by run() until the state is done.
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
      if (participant_) {
        participant_->join();
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
    report();
    return result_;
  }

 private:
  // ---- starting -----------------------------------------------------------------

  // The store every worker meets through (node 0 hosts it, on this loop,
  // for the whole run), the run directory, then the components of a round.
  Expected<void> start() {
    master_port_ = plan_.master_port ? std::to_string(*plan_.master_port) : "";
    if (plan_.multi_node) {
      GANGRUN_TRY(start_rendezvous());
    } else if (plan_.node_rank == 0) {
      GANGRUN_TRY_ASSIGN(started, start_agent_store(io_, plan_));
      store_ = std::move(*started);
      master_port_ = std::to_string(store_->port());
    }
    GANGRUN_TRY_ASSIGN(run_dir, launch::RunDirectory::create(
                                    plan_.log_dir, temp_dir(plan_.host_env), plan_.run_id));
    run_dir_.emplace(std::move(*run_dir));
    if (!run_dir_->temporary()) spdlog::info("logs of this run: {}", run_dir_->path());

    record_.run_id = plan_.run_id;
    record_.host = plan_.host;
    record_.entrypoint = plan_.program.entrypoint;
    record_.interpreter = plan_.program.interpreter;
    record_.plan = launch::plan_to_json(plan_);
    record_.started_at = std::chrono::system_clock::now();
    if (!run_dir_->temporary()) record_.log_dir = run_dir_->path();
    register_job();

    logging_through_console_.emplace(console_);
    supervise::GangSettings settings = gang_settings(plan_);
    settings.on_failure = [this](const supervise::AttemptOutcome& so_far) {
      doctor_->worker_failed();
      if (!participant_) return;
      failed_here_ = true;
      participant_->report_failure(failure_report(participant_->me(), so_far));
    };
    gang_.emplace(io_, console_, *spawner_, settings);
    std::optional<doctor::DoctorLink::Settings> nodes;
    if (plan_.multi_node) {
      nodes = doctor::DoctorLink::Settings{.store = agent_store_client(plan_),
                                           .secret = plan_.job_secret,
                                           .run_id = plan_.run_id,
                                           .agent_id = agent_id_};
    }
    doctor_.emplace(
        io_, *spawner_, plan_, *gang_, [this] { stop_hung(); }, nodes, store_.get());
    std::set<int> handled = plan_.teardown_signals;
    handled.insert({SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT, SIGCHLD});
    for (int signal_number : handled) signals_.add(signal_number);
    arm_signals();
    return {};
  }

  // --on-hang stop or restart. On many nodes only the lead acts, and its own
  // workers may be done already: then the coordinator hears of the hang as
  // this node's failure and ends the round on every node.
  void stop_hung() {
    if (gang_->running() || !participant_) return gang_->stop_hung();
    participant_->report_failure(hang_report(participant_->me()));
  }

  // Lets `gangrun stacks` find this job from another terminal. A job that
  // cannot be registered still runs.
  void register_job() {
    doctor::RegisteredJob job{
        .pid = ::getpid(),
        .start_ticks = doctor::process_start_ticks(::getpid()).value_or(0),
        .run_id = plan_.run_id,
        .host = plan_.host,
        .log_dir = record_.log_dir ? std::optional<std::string>(
                                         std::filesystem::absolute(*record_.log_dir).string())
                                   : std::nullopt,
        .program = plan_.program.entrypoint,
        .interpreter = plan_.program.interpreter
                           ? std::optional<std::string>(plan_.program.interpreter->path)
                           : std::nullopt,
        .nodes = std::nullopt};
    if (plan_.multi_node) {
      store::ClientSettings store = agent_store_client(plan_);
      job.nodes = doctor::RegisteredJob::Nodes{
          .store_host = store.host,
          .store_port = store.port,
          .stacks_key = plan_.job_secret
                            ? std::optional<std::string>(rendezvous::derived_key(
                                  *plan_.job_secret, rendezvous::k_stacks_purpose, plan_.run_id))
                            : std::nullopt};
    }
    auto registered = doctor::Registration::create(plan_.host_env, job);
    if (!registered) {
      spdlog::warn("gangrun stacks will not find this job: {}", registered.error().describe());
      return;
    }
    registration_.emplace(std::move(*registered));
  }

  // Hosts the store and the coordinator if this agent is the rendezvous'
  // host, and joins as a participant (the host too, through its own store).
  Expected<void> start_rendezvous() {
    GANGRUN_TRY_ASSIGN(hosted, host_rendezvous_store(io_, plan_));
    rendezvous::ParticipantSettings settings = participant_settings(plan_);
    agent_id_ = settings.me.id;
    if (!plan_.job_secret) {
      spdlog::warn(
          "the rendezvous is not authenticated: anyone who can reach {} can join, end or "
          "steer this job; give every node the same GANGRUN_JOB_SECRET (or "
          "GANGRUN_JOB_SECRET_FILE) to close it",
          host::endpoint_text(plan_.master_addr, master_port_text()));
    }
    store_ = std::move(*hosted);
    if (store_) {
      coordinator_ = std::make_unique<rendezvous::Coordinator>(
          io_, *store_, coordinator_settings(plan_, agent_id_));
    }
    participant_ = std::make_unique<rendezvous::Participant>(
        io_, std::move(settings),
        rendezvous::ParticipantEvents{
            .round_assigned =
                [this](const rendezvous::RoundPlan& round, const rendezvous::Member& me) {
                  launch::RoundAssignment assignment = assignment_from(
                      round, me, attempts_here_++, participant_->store_connection());
                  record_.node = rendezvous::node_name(me);
                  spdlog::info("round {}: ranks {}-{} of {} (node {} of {}){}", round.round,
                               me.rank_offset, me.rank_offset + me.local_world_size - 1,
                               round.world_size, me.group_rank, round.members.size(),
                               assignment.master_addr == round.master_addr
                                   ? ""
                                   : fmt::format("; MASTER_ADDR={} ({}, as this node reached it)",
                                                 assignment.master_addr, round.master_addr));
                  doctor::GangDoctor::NodeRound nodes{.round = round.round,
                                                      .members = {},
                                                      .names = {},
                                                      .lead = me.group_rank == 0,
                                                      .job_nonce = participant_->job_nonce()};
                  for (const rendezvous::Member& member : round.members) {
                    nodes.members.push_back(member.id);
                    nodes.names.emplace(member.id, rendezvous::node_name(member));
                  }
                  node_round_ = std::move(nodes);
                  network_env_ = round_network_.decide(
                      plan_, round.round, participant_->store_connection(),
                      launch::list_network_interfaces(),
                      store_ ? store_->address_reached_from_outside() : std::nullopt);
                  begin_assigned_round(assignment);
                },
            .round_ending = [this](const rendezvous::RoundEnd& end) { on_round_ending(end); },
            .job_done = [this](const rendezvous::JobOutcome& outcome) { on_job_done(outcome); },
            .store_lost = [this](const Error& error) { on_store_lost(error); },
            .refused = [this](const Error& error) { on_refused(error); }});
    return {};
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

  void begin_assigned_round(const launch::RoundAssignment& round) {
    auto prepared = run_dir_->prepare_attempt(round.attempt, plan_.local_world_size);
    if (!prepared) {
      spdlog::error("{}", prepared.error().describe());
      result_.exit_code = prepared.error().exit_code();
      // The other nodes learn it from this agent's closed connection.
      participant_.reset();
      set_state(AgentState::done);
      return;
    }
    stopped_for_round_end_ = false;
    failed_here_ = false;
    set_state(stop_signal_ ? AgentState::stopping : AgentState::running);
    std::vector<supervise::WorkerLaunch> launches = make_launches(plan_, round, run_dir_->path());
    const std::string attempt_path = run_dir_->attempt_path(round.attempt);
    for (auto& [name, value] : doctor_->worker_env(attempt_path)) {
      for (supervise::WorkerLaunch& launch : launches) launch.spawn.env[name] = value;
    }
    for (auto& [name, value] : network_env_) {
      for (supervise::WorkerLaunch& launch : launches) launch.spawn.env[name] = value;
    }
    gang_->start(std::move(launches), [this, round](const supervise::AttemptOutcome& outcome) {
      on_round_done(round, outcome);
    });
    doctor_->round_started(
        run_dir_->temporary() ? std::nullopt
                              : std::optional<std::string>(run_dir_->attempt_path(round.attempt)),
        round.master_port.empty() ? "" : round.master_addr + ":" + round.master_port, node_round_);
    // A teardown signal that came between rounds ends this one before any
    // worker starts.
    if (stop_signal_) gang_->stop(*stop_signal_);
  }

  void on_round_done(const launch::RoundAssignment& round,
                     const supervise::AttemptOutcome& outcome) {
    record_.attempts.push_back(to_record(outcome, round.attempt, *run_dir_));
    // A stack reading still under way (bounded) lands in this round's record.
    doctor_->round_ended(
        [this, round, outcome, at = record_.attempts.size() - 1](report::DoctorFindings found) {
          report::AttemptRecord& attempt = record_.attempts.at(at);
          attempt.doctor = std::move(found);
          ask_interpreter(round, outcome);
        });
  }

  void ask_interpreter(const launch::RoundAssignment& round,
                       const supervise::AttemptOutcome& outcome) {
    std::vector<std::string> packages = packages_to_probe(plan_, record_.attempts.back());
    if (packages.empty()) return after_round(round, outcome);
    // The interpreter runs as a child on this loop, which goes on serving
    // the store and the coordinator meanwhile.
    probe_.start(plan_.program.interpreter->path, plan_.host_env, std::move(packages),
                 [this, round, outcome,
                  at = record_.attempts.size() - 1](std::optional<std::string> unimportable) {
                   report::AttemptRecord& attempt = record_.attempts.at(at);
                   if (unimportable) {
                     attempt.workers.at(*attempt.first_failure).unimportable_module =
                         std::move(*unimportable);
                   }
                   after_round(round, outcome);
                 });
  }

  void after_round(const launch::RoundAssignment& round, const supervise::AttemptOutcome& outcome) {
    if (plan_.multi_node) return on_node_round_done(outcome);
    int restart_count = round.restart_count;
    bool restarts_left = restart_count < plan_.max_restarts;
    if (outcome.stopped_for_hang && !outcome.stopped_by_signal) {
      if (plan_.doctor.on_hang != config::OnHang::restart || !restarts_left) {
        result_.exit_code = exit_codes::k_hang;
        set_state(AgentState::done);
        return;
      }
      spdlog::warn("the gang hung; restarting it ({} of {} restarts)", restart_count + 1,
                   plan_.max_restarts);
      set_state(AgentState::restarting);
      asio::post(io_, [this, next = restart_count + 1] { begin_round(next); });
      return;
    }
    if (outcome.succeeded() || outcome.stopped_by_signal || !restarts_left) {
      finish();
      return;
    }
    const supervise::WorkerOutcome& root = outcome.workers.at(*outcome.root_cause);
    std::string what = outcome.blame
                           ? report::describe(*outcome.blame)
                           : fmt::format("rank {} failed ({})", root.rank, root.status.describe());
    spdlog::warn("{}; restarting the gang ({} of {} restarts)", what, restart_count + 1,
                 plan_.max_restarts);
    set_state(AgentState::restarting);
    asio::post(io_, [this, next = restart_count + 1] { begin_round(next); });
  }

  // ---- many nodes ---------------------------------------------------------------

  // This node's workers ended: the coordinator decides what comes next.
  void on_node_round_done(const supervise::AttemptOutcome& outcome) {
    if (lost_store_ || !participant_) return finish_lost_store();
    set_state(AgentState::restarting);
    participant_->report_result(round_report(participant_->me(), outcome, stopped_for_round_end_));
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
    result_.exit_code = outcome.exit_code;
    bool mine = outcome.root_agent == agent_id_;
    // Only a signal this agent was stopped by itself is raised again: a
    // number from the network is never a signal to raise.
    if (mine && outcome.stop_signal && outcome.stop_signal == stop_signal_) {
      result_.die_by_signal = stop_signal_;
    }
    if (outcome.exit_code == 0 && !record_.attempts.empty() && last_round_failed_here()) {
      spdlog::error(
          "the job was reported a success, but this node's workers did not all succeed: "
          "exiting with {}",
          k_lost_rendezvous);
      result_.exit_code = k_lost_rendezvous;
    }
    if (!record_.attempts.empty()) blame_as_told(outcome, record_.attempts.back());
    if (!outcome.message.empty() && !mine) {
      // No agent to blame (nodes missing at the join timeout): nothing
      // happened "on another node", whichever node hosts the coordinator.
      spdlog::error("the job ended{}: {} (this node exits with {})",
                    outcome.root_agent.empty() ? "" : " on another node", outcome.message,
                    outcome.exit_code);
    }
    // Leaving closes this agent's connections: the coordinator counts it out.
    participant_.reset();
    if (!coordinator_) return set_state(AgentState::done);
    // The store stays up until every agent has read the outcome.
    coordinator_->when_everyone_answered([this] { set_state(AgentState::done); });
  }

  // On many nodes the coordinator, which heard every node, decides whom a
  // failure is blamed on; a node's own judgement of its part is dropped.
  // When the blamed ranks ran here, the summary this node prints names the
  // first of them.
  static void blame_as_told(const rendezvous::JobOutcome& outcome, report::AttemptRecord& attempt) {
    attempt.blame.reset();
    attempt.root_cause = attempt.first_failure;
    if (outcome.waited_for.empty()) return;
    for (std::size_t i = 0; i < attempt.workers.size(); ++i) {
      if (attempt.workers[i].rank != outcome.waited_for.front()) continue;
      attempt.root_cause = i;
      attempt.blame = outcome.message;
      return;
    }
  }

  void on_store_lost(const Error& error) {
    spdlog::error("lost the rendezvous store at {}: {}",
                  host::endpoint_text(plan_.master_addr, master_port_text()), error.message());
    lost_store_ = true;
    participant_.reset();
    result_.exit_code = k_lost_rendezvous;
    if (gang_->running()) {
      stopped_for_round_end_ = true;
      gang_->stop(SIGTERM);
      return;
    }
    finish_lost_store();
  }

  // Runs inside the participant's own callback, like the handlers above:
  // once participant_ is reset, only members of this object are touched.
  void on_refused(const Error& error) {
    spdlog::error("{}", error.message());
    result_.exit_code = error.exit_code();
    participant_.reset();
    set_state(AgentState::done);
  }

  // The store is gone: this node's own root cause, when it had one, is the
  // job's code here (the head cannot say otherwise any more), else 3.
  void finish_lost_store() {
    result_.exit_code = k_lost_rendezvous;
    if (!record_.attempts.empty() && failed_here_) {
      const report::AttemptRecord& last = record_.attempts.back();
      if (last.first_failure) result_.exit_code = last.workers.at(*last.first_failure).shell_code;
    }
    set_state(AgentState::done);
  }

  // This node's workers failed in its last round, or were stopped by a
  // signal to this agent (not because another node ended the round).
  bool last_round_failed_here() const {
    const report::AttemptRecord& last = record_.attempts.back();
    return !stopped_for_round_end_ && (last.root_cause || last.stopped_by_signal);
  }

  std::string master_port_text() const {
    return plan_.master_port ? std::to_string(*plan_.master_port) : master_port_;
  }

  void finish() {
    const report::AttemptRecord& last = record_.attempts.back();
    if (last.stopped_by_signal) {
      result_.die_by_signal = last.stopped_by_signal;
      result_.exit_code = exit_codes::for_signal(*last.stopped_by_signal);
    } else if (last.first_failure) {
      result_.exit_code = last.workers.at(*last.first_failure).shell_code;
    }
    set_state(AgentState::done);
  }

  void report() {
    if (job_outcome_) record_.job = job_record(*job_outcome_, agent_id_);
    if (record_.attempts.empty()) {
      write_report();
      return;  // no round ran here (a run directory failed, a spare, a lost store)
    }
    const report::AttemptRecord& last = record_.attempts.back();
    // On many nodes the full summary belongs to the node of the root cause.
    bool root_here = !job_outcome_ || job_outcome_->root_agent == agent_id_;
    bool blamed_here = last.blame && root_here;
    if (last.root_cause && root_here && (!stopped_for_round_end_ || blamed_here)) {
      report_failure(plan_, record_, last);
    }
    write_report();
  }

  void write_report() {
    if (plan_.report_path) {
      if (auto written = report::write_report(*plan_.report_path, record_); !written) {
        spdlog::error("{}", written.error().describe());
        // A report asked for and not written is no success, though the workers' was: a
        // job's own failure keeps its code.
        if (result_.exit_code == 0) result_.exit_code = exit_codes::k_system_failure;
      }
    }
  }

  // ---- signals ----------------------------------------------------------------

  void arm_signals() {
    signals_.async_wait([this](const boost::system::error_code& error, int signal_number) {
      if (error) return;
      on_signal(signal_number);
      arm_signals();
    });
  }

  void on_signal(int signal_number) {
    if (plan_.teardown_signals.contains(signal_number)) {
      on_teardown_signal(signal_number);
      return;
    }
    switch (signal_number) {
      case SIGCHLD:
        // Supervisors are reaped by their own handlers; anything else that
        // ended is a stray (a shim whose worker could not start, an orphan
        // of a killed shim).
        spawner_->reap_strays(own_children());
        return;
      case SIGTSTP:
        // Workers lead orphaned process groups, where the kernel discards
        // SIGTSTP; SIGSTOP is the only stop that reaches them.
        gang_->forward(SIGSTOP);
        ::raise(SIGSTOP);
        return;
      case SIGCONT:
        gang_->forward(SIGCONT);
        return;
      default:  // USR1, USR2: the training script's business (SLURM preemption notices)
        spdlog::info("forwarding {} to the workers", signals::name(signal_number));
        gang_->forward(signal_number);
        return;
    }
  }

  // gangrun's children that stray reaping must leave alone: the gang's
  // shims and the interpreter probe's.
  std::set<pid_t> own_children() const {
    std::set<pid_t> keep = gang_->supervisor_pids();
    keep.merge(probe_.supervisor_pids());
    keep.merge(doctor_->supervisor_pids());
    return keep;
  }

  void on_teardown_signal(int signal_number) {
    if (plan_.multi_node && !gang_->running()) {
      // Waiting for a round, as a spare, or for the others: nothing of this
      // node runs, so it leaves now (its closed connection tells the rest).
      spdlog::warn("received {}; leaving the rendezvous", signals::name(signal_number));
      participant_.reset();
      result_.exit_code = exit_codes::for_signal(signal_number);
      result_.die_by_signal = signal_number;
      set_state(AgentState::done);
      return;
    }
    if (!stop_signal_) {
      stop_signal_ = signal_number;
      if (state_ != AgentState::running) return;  // the next round ends before it starts
      if (gang_->live_workers() > 0) {
        spdlog::warn("received {}; stopping the workers (send it again to kill them at once)",
                     signals::name(signal_number));
      }
      set_state(AgentState::stopping);
      gang_->stop(signal_number);
      return;
    }
    if (state_ != AgentState::stopping || gang_->live_workers() == 0) return;
    spdlog::warn("received {} again; killing the workers now", signals::name(signal_number));
    gang_->stop(signal_number);
  }

  // Destroyed in reverse: the gang and its shims' handlers first, the
  // store and the loop last.
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
  // The interface variables of the round on many nodes (agent/round_network.hpp).
  RoundNetwork round_network_;
  EnvMap network_env_;
  std::optional<doctor::GangDoctor::NodeRound>
      node_round_;  // the round this node runs, on many nodes
  asio::signal_set signals_{io_};

  // Many nodes: the coordinator (on the store's host) and this agent's part.
  std::unique_ptr<rendezvous::Coordinator> coordinator_;
  std::unique_ptr<rendezvous::Participant> participant_;
  std::string agent_id_;
  int attempts_here_ = 0;               // rounds this node has run
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
