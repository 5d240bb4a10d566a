// --straggler-watch: every interval, every rank's stack read without
// pausing it, tallied (doctor/straggler.hpp); a rank that stands out is
// named once per round, and the tally goes into the report's
// straggler_watch. Its own StackProbe, so that sampling never holds up a
// hang's reading.
#pragma once

#include "doctor/straggler.hpp"
#include "doctor/watch/stack_probe.hpp"
#include "doctor/watch/watch.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <set>

namespace gangrun::doctor {

class StragglerSampler final : public Watch {
 public:
  // Everything given outlives the sampler. reading_ended: a sample still
  // under way when the round ended is in (the round's findings waited).
  StragglerSampler(boost::asio::io_context& io, supervise::Spawner& spawner,
                   const launch::LaunchPlan& plan, const supervise::Gang& gang,
                   SharedStackTool& tool, std::function<void()> reading_ended);

  void round_started(const RoundStart& round) override;
  void round_ended() override;
  bool reading() const override { return sampler_.running(); }
  void add_findings(report::DoctorFindings& findings) const override;
  std::set<pid_t> supervisor_pids() const override { return sampler_.supervisor_pids(); }
  void add_marks(LiveMarks& marks) const override;

 private:
  // The next sample after the interval, and what it says.
  void sample_later();
  void after_sample(const std::vector<RankStacks>& ranks);

  const launch::LaunchPlan& plan_;
  const supervise::Gang& gang_;
  SharedStackTool& tool_;
  std::function<void()> reading_ended_;
  StackProbe sampler_;
  boost::asio::steady_timer timer_;
  // Per round.
  bool round_over_ = false;
  StragglerTally tally_;
  std::set<int> named_;
  std::uint64_t named_in_run_ = 0;  // every round's
};

}  // namespace gangrun::doctor
