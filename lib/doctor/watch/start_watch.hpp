// The round's start (--start-timeout), and what the hang watch leaves to it.
// A Python program's rank is starting from its spawn until it first prints
// a line or first holds a connection to the round's store (read from /proc,
// as --arrival-timeout reads it): importing torch from a slow filesystem,
// loading before init_process_group, waiting for the rendezvous. The round
// is starting while any live rank of this node is. Other programs, and
// rounds whose store is not known, have no start: they need not meet at the
// store, and nothing tells when they are ready.
//
// While the round starts, the hang watch does not count silence
// (HangWatch::Progress::starting; across nodes, a node tells the lead no
// silence), and the start's end, as seen, is the silence's first sign of
// life. When the start has lasted --start-timeout, every live rank's stack
// is read, the ranks still starting are named (those in an import said so),
// and --on-hang acts as for a hang; with `report`, again every timeout while
// the start lasts. Each node watches its own ranks' start.
#pragma once

#include "doctor/watch/stack_reader.hpp"
#include "doctor/watch/watch.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gangrun::doctor {

// Which of a round's ranks have started, from what each look saw; pure.
class StartTally {
 public:
  using Clock = std::chrono::steady_clock;
  // A live rank as one look saw it.
  struct Seen {
    int rank = 0;
    bool printed = false;   // it has printed a line
    bool at_store = false;  // it holds a connection to the round's store
  };

  // A round began at `at`; watched: its ranks have a start to watch (else
  // the start is over at once).
  void round_started(Clock::time_point at, bool watched);
  // One look at the live ranks, at `now`. A rank once started stays so; the
  // start ends at the first look that finds every live rank started. A look
  // that finds no live rank ends it only when an earlier look found some
  // (they have all exited); before any rank is spawned, the start goes on.
  void look(const std::vector<Seen>& live, Clock::time_point now);
  // This node's ranks are done: whatever they did, their start is over.
  void round_ended(Clock::time_point now) {
    if (!ended_at_) ended_at_ = now;
  }
  bool starting() const { return !ended_at_; }
  std::optional<Clock::time_point> ended_at() const { return ended_at_; }
  bool has_started(int rank) const { return started_.contains(rank); }
  // The ranks among live that have not started, in order.
  std::vector<int> still_starting(const std::vector<int>& live) const;

 private:
  std::set<int> started_;
  bool seen_any_ = false;  // a look found a live rank
  std::optional<Clock::time_point> ended_at_;
};

// The ranks among `starting` whose main thread the reading found in an
// import.
std::vector<int> importing_ranks(const std::vector<RankStacks>& ranks,
                                 const std::vector<int>& starting);
// The line after the stacks: which of the ranks still starting import.
std::string importing_line(const std::vector<int>& importing, std::size_t starting);

class StartWatch final : public Watch {
 public:
  using Clock = StartTally::Clock;
  // Everything given outlives the watch. stop_hung: --on-hang stop or
  // restart ends the round; reading_ended: the round ended while a reading
  // ran, and it is over.
  StartWatch(boost::asio::io_context& io, const launch::LaunchPlan& plan,
             const supervise::Gang& gang, StackReader& reader, std::function<void()> stop_hung,
             std::function<void()> reading_ended);

  // This node's ranks: some are still starting; when not, since when all have.
  bool starting() const { return tally_.starting(); }
  std::optional<Clock::time_point> ended_at() const { return tally_.ended_at(); }

  // The hang watch found the gang silent for --hang-timeout while it starts:
  // says so on the console (the ranks still starting, and which flag bounds
  // the start), since a user who set a short --hang-timeout expects a report.
  void tell_silent_while_starting(Clock::duration silent_for);

  void round_started(const RoundStart& round) override;
  void worker_failed() override { round_ended(); }
  void round_ended() override;
  bool reading() const override { return reading_; }
  void add_findings(report::DoctorFindings& findings) const override;

 private:
  void look();
  // The live ranks, by rank, and those of them still starting.
  std::vector<int> live_ranks() const;
  void on_start_timeout(const std::vector<int>& starting);
  void after_read(const std::vector<RankStacks>& ranks, const std::vector<int>& starting);

  const launch::LaunchPlan& plan_;
  const supervise::Gang& gang_;
  StackReader& reader_;
  std::function<void()> stop_hung_;
  std::function<void()> reading_ended_;
  boost::asio::steady_timer timer_;
  std::chrono::milliseconds tick_;
  // Per round.
  RoundStart round_;
  bool over_ = false;
  bool reading_ = false;
  StartTally tally_;
  Clock::time_point next_report_at_;
  std::optional<report::StartTimeoutFinding> found_;
};

}  // namespace gangrun::doctor
