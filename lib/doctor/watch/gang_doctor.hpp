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
// Every part is a watch (watch.hpp) in one list: the hang's response
// (hang_response.hpp), the round's start (start_watch.hpp), torch's file timers
// (file_timer_watch.hpp), the stacks at a failure, the ranks late to the store, the straggler
// sampling, NCCL's flight recorder. Each hears of every round and puts its own part into the
// round's findings (report::DoctorFindings), which the agent hands to the report whole. The doctor
// keeps what they share: the stack reader, the round (doctor_round.hpp) and, across nodes, the link
// and the silence exchange (silence_exchange.hpp).
#pragma once

#include "doctor/watch/doctor_link.hpp"
#include "doctor/watch/doctor_round.hpp"
#include "doctor/watch/file_timer_watch.hpp"
#include "doctor/watch/hang_response.hpp"
#include "doctor/watch/hang_watch.hpp"
#include "doctor/watch/silence_exchange.hpp"
#include "doctor/watch/stack_reader.hpp"
#include "doctor/watch/start_watch.hpp"
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

  // A round of a multi-node job, as the doctor needs it (doctor_round.hpp).
  using NodeRound = doctor::NodeRound;

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
  // Every watch's marks now (hang, stragglers), for the node's snapshot.
  LiveMarks marks() const;
  // Across nodes: what answers `gangrun top`'s status requests (the node's
  // snapshot as JSON); until it is given, they go unanswered.
  void serve_status(std::function<std::string()> status_json) {
    status_json_ = std::move(status_json);
  }

  // What the doctor adds to every worker's environment in the round whose
  // directory is attempt_path, every watch's (Watch::worker_env): the named
  // pipe of torch's file timers (TORCHELASTIC_TIMER_FILE, when
  // TORCHELASTIC_ENABLE_FILE_TIMER=1), the flight recorder's variables
  // (--flight-recorder). Before round_started.
  EnvMap worker_env(const std::string& attempt_path);

 private:
  // The live workers' signs of life: a line, or a file timer request.
  std::vector<HangWatch::Clock::time_point> worker_progress() const;
  // What the hang watch counts the silence of: the live workers, the
  // store's last request and, on the lead, every other node's progress.
  HangWatch::Progress hang_progress() const;
  // The watches that the plan asks for, in the order each hears of a round.
  // A new watch is made here.
  void add_watches(boost::asio::io_context& io, supervise::Spawner& spawner, StopHandler stop_hung);
  // Hands the findings over when the round has ended meanwhile.
  void deliver_if_over();

  const launch::LaunchPlan& plan_;
  supervise::Gang& gang_;
  const store::Server* store_server_;  // hosted here, else null
  StackReader reader_;                 // every watch's stack readings, one at a time
  DoctorRound round_;
  // The watches, each told of every round.
  std::vector<std::unique_ptr<Watch>> watches_;
  FileTimerWatch* file_timers_ = nullptr;    // among watches_: requests are signs of life
  HangResponse* hang_ = nullptr;             // among watches_ (--hang-timeout, several nodes)
  StartWatch* start_ = nullptr;              // among watches_ (--hang-timeout or --start-timeout)
  std::optional<SilenceExchange> silences_;  // several nodes and --hang-timeout
  std::function<void(Findings)> after_reading_;  // round_ended's `then`, while a reading runs
  std::function<std::string()> status_json_;     // serve_status's
  // Several nodes. Last, so that it goes first: its handlers call the parts above.
  std::unique_ptr<DoctorLink> link_;
};

}  // namespace gangrun::doctor
