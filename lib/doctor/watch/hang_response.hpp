// What the gang doctor does about a hang (--hang-timeout): its HangWatch
// (hang_watch.hpp) says the gang is silent; every rank's stack is read
// before anything is stopped, told on the console, in the attempt's
// directory and in the report, the flight recorder's dumps are asked for
// (--flight-recorder), and --on-hang acts.
//
// Across nodes (a DoctorLink) the lead alone watches: on a hang it asks every
// node through the link, waits for every node's answer (so that no node's
// workers are stopped while another still reads), merges them and acts.
// Every node answers every request of the round, the lead's hang's or
// `gangrun stacks`', with its own ranks' stacks; only the lead acts, and only
// on its own hang: a request is a number in a message that a stranger may
// have written.
#pragma once

#include "doctor/watch/doctor_link.hpp"
#include "doctor/watch/doctor_round.hpp"
#include "doctor/watch/flight_recorder.hpp"
#include "doctor/watch/hang_watch.hpp"
#include "doctor/watch/stack_reader.hpp"
#include "doctor/watch/watch.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::doctor {

class HangResponse final : public Watch {
 public:
  // What it needs of the doctor; everything outlives the response.
  struct Parts {
    const launch::LaunchPlan& plan;
    supervise::Gang& gang;
    StackReader& reader;
    const DoctorRound& round;            // the doctor's, which it keeps up to date
    DoctorLink* link = nullptr;          // several nodes, else null
    FlightRecorder* recorder = nullptr;  // --flight-recorder, else null
  };
  // progress: what the hang watch counts the silence of (when
  // --hang-timeout is set). stop_hung: --on-hang stop or restart ends the
  // round. reading_ended: the round ended while a reading or a wait ran, and
  // it is over.
  HangResponse(boost::asio::io_context& io, Parts parts, HangWatch::ProgressFn progress,
               std::function<void()> stop_hung, std::function<void()> reading_ended);

  // Request `number` of the round came (DoctorLink's handler).
  void on_node_request(std::int64_t number, const NodeRequest& request);
  // Across nodes: the round is over on every node; the lead stops watching
  // the others if its own ranks are done.
  void gang_round_ended();

  void round_started(const RoundStart& round) override;
  void worker_failed() override;
  void round_ended() override;
  void add_findings(report::DoctorFindings& findings) const override;
  void add_marks(LiveMarks& marks) const override;

 private:
  void on_hang(HangWatch::Clock::duration silent_for);
  // What a hang's reading found, told and acted on: ranks as read (every
  // node's, on the lead), the ranks without a store connection and the line
  // that says so.
  // act: this node acts on --on-hang (one node: always; many: the lead, for
  // its own hang only).
  void after_hang_read(const std::vector<RankStacks>& ranks, double silent_for_s,
                       const std::string& heading, std::optional<std::vector<int>> not_at_store,
                       const std::string& store_line, bool act = true);
  // The lead: every node's answer to its own hang's request is in (or the
  // limit passed).
  void after_nodes_read(const DoctorLink::ByAgent<NodeAnswer>& answers, double silent_for_s);
  // --on-hang's action, once the flight recorder's dumps asked for are in
  // (or did not come within a bound).
  void act_on_hang(int dumps_asked, HangWatch::Clock::time_point asked_at);

  Parts parts_;
  std::optional<HangWatch> watch_;  // --hang-timeout
  std::function<void()> stop_hung_;
  std::function<void()> reading_ended_;
  boost::asio::steady_timer dump_wait_;
  // Per round.
  std::string hang_ask_;     // the lead's ask for its own hang
  bool hang_acted_ = false;  // --on-hang's action was taken
  std::optional<report::HangFinding> found_;
  std::uint64_t hangs_in_run_ = 0;  // every round's
};

}  // namespace gangrun::doctor
