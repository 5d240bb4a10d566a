// Stacks at a failure (on unless --no-stacks-at-failure): when a worker
// fails by itself, the survivors' stacks are read once per round, at once,
// while the failure window keeps them running; they go into the report's
// stacks_at_failure. Only a Python program's ranks have stacks the tool
// reads.
#pragma once

#include "doctor/watch/stack_reader.hpp"
#include "doctor/watch/watch.hpp"

#include <functional>
#include <optional>

namespace gangrun::doctor {

class FailureStacks final : public Watch {
 public:
  // Everything given outlives the watch. reading_ended: a reading still
  // under way when the round ended is in (the round's findings waited).
  FailureStacks(const launch::LaunchPlan& plan, const supervise::Gang& gang, StackReader& reader,
                std::function<void()> reading_ended);

  void round_started(const RoundStart& round) override;
  void worker_failed() override;
  void round_ended() override { round_over_ = true; }
  void add_findings(report::DoctorFindings& findings) const override;

 private:
  const launch::LaunchPlan& plan_;
  const supervise::Gang& gang_;
  StackReader& reader_;
  std::function<void()> reading_ended_;
  // Per round.
  bool round_over_ = false;
  bool read_ = false;
  std::optional<nlohmann::json> stacks_;
};

}  // namespace gangrun::doctor
