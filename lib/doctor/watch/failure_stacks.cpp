#include "doctor/watch/failure_stacks.hpp"

namespace gangrun::doctor {

FailureStacks::FailureStacks(const launch::LaunchPlan& plan, const supervise::Gang& gang,
                             StackReader& reader, std::function<void()> reading_ended)
    : plan_(plan), gang_(gang), reader_(reader), reading_ended_(std::move(reading_ended)) {}

void FailureStacks::round_started(const RoundStart&) {
  round_over_ = false;
  read_ = false;
  stacks_.reset();
}

void FailureStacks::worker_failed() {
  // There is no time to tell anyone how to install the tool now.
  if (!reader_.tool().path || !runs_python(plan_)) return;
  if (read_ || round_over_ || reader_.running()) return;
  std::vector<StackTarget> targets = live_targets(gang_);
  if (targets.empty()) return;
  read_ = true;
  reader_.read(targets, k_failure_read_limit, [this](const std::vector<RankStacks>& ranks) {
    stacks_ = reader_.tell(ranks, "failure-stacks.txt",
                           "where the other ranks were when the first failure was seen:");
    reading_ended_();
  });
}

void FailureStacks::add_findings(report::DoctorFindings& findings) const {
  if (stacks_) findings.stacks_at_failure = *stacks_;
}

}  // namespace gangrun::doctor
