// The gang doctor on one node: the agent's component that watches a round
// for a hang (hang_watch.hpp), reads every rank's stack before anything is
// stopped (stack_probe.hpp), says where each rank was on the console, in the
// attempt's directory and in the report, and then tells the agent to act
// (--on-hang). It also reads the survivors' stacks when a rank fails, while
// the failure window keeps them running. The agent asks it to finish a
// round before the round's record is written, so a reading still under way
// (bounded by its limit) lands in that record.
//
// Across nodes (a DoctorLink given): the round's lead (its node of group
// rank 0) alone watches, for the whole gang: the other nodes send their
// ranks' silence every tick. When the gang is silent for the timeout, the
// lead asks every node; each reads its own ranks at once and answers. The
// lead waits for every node's answer (so that no node's workers are stopped
// while another still reads), prints the merged summary and acts on
// --on-hang: it stops its own workers, and the coordinator ends the round
// on every node. No other node acts on a request, and the lead acts only on
// its own reading of the silences: a request is a number in a message that
// a stranger may have written. `gangrun stacks` asks the same way.
//
// The watches that stand alone (watch.hpp: the stacks at a failure, the ranks late to the store,
// the straggler sampling, NCCL's flight recorder) are a list: each hears of every round and puts
// its own part into the round's findings (report::DoctorFindings), which the agent hands to the
// report whole.
#pragma once

#include "doctor/store_peers.hpp"
#include "doctor/watch/doctor_link.hpp"
#include "doctor/watch/file_timers.hpp"
#include "doctor/watch/flight_recorder.hpp"
#include "doctor/watch/hang_watch.hpp"
#include "doctor/watch/stack_probe.hpp"
#include "doctor/watch/stack_reader.hpp"
#include "doctor/watch/watch.hpp"
#include "launch/plan.hpp"
#include "report/run_record.hpp"
#include "store/server.hpp"
#include "supervise/gang.hpp"

#include <boost/asio/io_context.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace gangrun::doctor {

class GangDoctor {
 public:
  // Called once the hang has been reported, when --on-hang is stop or
  // restart: the agent ends the round (Gang::stop_hung; on many nodes, when
  // this lead's own workers are done already, it reports the hang to the
  // coordinator).
  using StopHandler = std::function<void()>;

  // Everything given outlives the doctor. nodes: the job has several;
  // store: the one this agent hosts, whose workers' requests count as
  // progress.
  GangDoctor(boost::asio::io_context& io, supervise::Spawner& spawner,
             const launch::LaunchPlan& plan, supervise::Gang& gang, StopHandler stop_hung,
             std::optional<DoctorLink::Settings> nodes = std::nullopt,
             const store::Server* store = nullptr);

  // A round of a multi-node job, as the doctor needs it.
  struct NodeRound {
    std::uint64_t round = 0;
    std::vector<std::string> members;  // every node's agent id
    // Each member's node as messages name it (rendezvous::node_name), by
    // agent id.
    std::map<std::string, std::string> names;
    bool lead = false;      // this node watches the whole gang
    std::string job_nonce;  // what the job's messages are sealed for
  };

  // A round began; attempt_dir is where its files go (nullopt: the run
  // directory is temporary, so only the console and the report get them),
  // store the address its workers meet at ("host:port"; empty when unknown).
  void round_started(std::optional<std::string> attempt_dir, std::string store,
                     std::optional<NodeRound> nodes = std::nullopt);
  // A worker failed by itself: the survivors' stacks are read once per round.
  void worker_failed();
  // What the round's readings found, typed; the report writes it
  // (report/run_report.cpp), the agent only hands it over.
  using Findings = report::DoctorFindings;
  // The round's gang is done: `then` gets what was found, at once or when a
  // reading still under way has ended (within its limit).
  void round_ended(std::function<void(Findings)> then);
  // Across nodes: the whole round is over, on every node (the coordinator
  // said so). Until then a node whose ranks are done still answers the
  // others, and the lead still watches them.
  void gang_round_ended();

  std::set<pid_t> supervisor_pids() const;

  // What the doctor adds to every worker's environment in the round whose
  // directory is attempt_path: the named pipe of torch's file timers
  // (TORCHELASTIC_TIMER_FILE, when TORCHELASTIC_ENABLE_FILE_TIMER=1), the
  // flight recorder's variables (--flight-recorder). Before round_started.
  EnvMap worker_env(const std::string& attempt_path);

 private:
  void on_hang(HangWatch::Clock::duration silent_for);
  void on_timer_expired(const FileTimers::Expired& expired);
  // The live workers, each with its last sign of life: a line, or a file
  // timer request.
  std::vector<supervise::Gang::LiveWorker> live_workers() const;
  // What the hang watch counts the silence of: the live workers, the
  // store's last request and, on the lead, every other node's silence.
  std::vector<supervise::Gang::LiveWorker> hang_watch_workers() const;
  // The watches that stand alone (watch.hpp) that the plan asks for, in
  // the order each hears of a round. A new watch is made here.
  void add_watches(boost::asio::io_context& io, supervise::Spawner& spawner);
  // What a hang's reading found, told and acted on: ranks as read (every
  // node's, on the lead), the ranks without a store connection and the line
  // that says so.
  // act: this node acts on --on-hang (one node: always; many: the lead, for
  // its own hang only).
  void after_hang_read(const std::vector<doctor::RankStacks>& ranks, double silent_for_s,
                       const std::string& heading, std::optional<std::vector<int>> not_at_store,
                       const std::string& store_line, bool act = true);
  // Across nodes: this node's silence to the lead, or the others' to it.
  void exchange_silence();
  // This node's watch covers the whole gang: it is the only node, or the
  // round's lead (the others only tell it their silence).
  bool watches_whole_gang() const { return !nodes_ || nodes_->lead; }
  // The lead's own ranks are done, the other nodes' still run: it goes on
  // watching their silence and, on a hang, asks them and prints where they
  // are (they act on --on-hang themselves).
  bool watches_others_after_end() const {
    return round_over_ && round_goes_on_ && nodes_ && nodes_->lead && watch_.has_value();
  }
  // The round is this node's to watch and read: its ranks run, or it is the
  // lead watching the others after its own.
  bool watching() const { return !round_over_ || watches_others_after_end(); }
  void on_node_request(std::int64_t number, const doctor::NodeRequest& request);
  // The node of a member of this round as messages name it; the id itself
  // for one the round does not list.
  std::string node_name_of(const std::string& agent_id) const;
  // The lead: every node's answer to its own hang's request is in (or the
  // limit passed).
  void after_nodes_read(const DoctorLink::ByAgent<doctor::NodeAnswer>& answers,
                        double silent_for_s);
  // --on-hang's action, once the flight recorder's dumps asked for are in
  // (or did not come within a bound).
  void act_on_hang(int dumps_asked, HangWatch::Clock::time_point asked_at);
  // Hands the findings over when the round has ended meanwhile.
  void deliver_if_over();

  const launch::LaunchPlan& plan_;
  supervise::Gang& gang_;
  StopHandler stop_hung_;
  const store::Server* store_server_;  // hosted here, else null
  StackReader reader_;                 // the hang's, a failure's and a file timer's readings
  std::optional<HangWatch> watch_;
  std::unique_ptr<FileTimers> file_timers_;
  // The watches that stand alone (watch.hpp), each told of every round.
  std::vector<std::unique_ptr<Watch>> watches_;
  FlightRecorder* recorder_ = nullptr;  // among watches_ (--flight-recorder), asked on a hang

  std::unique_ptr<DoctorLink> link_;  // several nodes
  std::string hang_ask_;              // the lead's ask for its own hang, this round
  boost::asio::steady_timer silence_timer_;

  // Per round.
  std::optional<NodeRound> nodes_;
  // The lead: when each other node's ranks last made progress, as far as
  // it has told (a node that has not told counts as making progress).
  std::map<std::string, HangWatch::Clock::time_point> node_progress_;
  HangWatch::Clock::time_point round_start_;
  boost::asio::steady_timer dump_wait_;
  std::string store_;
  bool hang_acted_ = false;     // --on-hang's action was taken this round
  bool round_over_ = false;     // this node's ranks are done
  bool round_goes_on_ = false;  // across nodes: until gang_round_ended()
  Findings findings_;
  std::function<void(Findings)> after_reading_;  // round_ended's `then`, while a reading runs
};

}  // namespace gangrun::doctor
