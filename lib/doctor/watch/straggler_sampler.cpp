#include "doctor/watch/straggler_sampler.hpp"

#include "doctor/stack_tool.hpp"

#include <spdlog/spdlog.h>

namespace gangrun::doctor {

namespace {

// A sample must not pause the ranks for long: as a failure's reading.
constexpr std::chrono::milliseconds k_sample_limit{1000};

}  // namespace

StragglerSampler::StragglerSampler(boost::asio::io_context& io, supervise::Spawner& spawner,
                                   const launch::LaunchPlan& plan, const supervise::Gang& gang,
                                   SharedStackTool& tool, std::function<void()> reading_ended)
    : plan_(plan),
      gang_(gang),
      tool_(tool),
      reading_ended_(std::move(reading_ended)),
      sampler_(io, spawner),
      timer_(io) {}

void StragglerSampler::round_started(const RoundStart&) {
  round_over_ = false;
  tally_ = {};
  named_.clear();
  if (tool_.path) {
    sample_later();
  } else if (!tool_.told_missing) {
    tool_.told_missing = true;
    spdlog::warn("--straggler-watch reads the ranks' stacks: {}", missing_tool_hint());
  }
}

void StragglerSampler::round_ended() {
  round_over_ = true;
  timer_.cancel();
}

void StragglerSampler::add_findings(report::DoctorFindings& findings) const {
  if (!tally_.empty()) findings.straggler_watch = tally_.to_json();
}

void StragglerSampler::sample_later() {
  timer_.expires_after(steady(*plan_.doctor.straggler_interval_s));
  timer_.async_wait([this](const boost::system::error_code& error) {
    if (error || round_over_) return;
    std::vector<StackTarget> targets = live_targets(gang_);
    if (targets.size() < 2 || sampler_.running()) return sample_later();
    sampler_.start(
        tool_.path, plan_.host, targets, plan_.host_env, k_sample_limit,
        [this](const std::vector<RankStacks>& ranks) { after_sample(ranks); },
        /*nonblocking=*/true);
  });
}

void StragglerSampler::after_sample(const std::vector<RankStacks>& ranks) {
  if (round_over_) return reading_ended_();
  tally_.add(ranks);
  for (int rank : tally_.stragglers()) {
    if (!named_.insert(rank).second) continue;
    ++named_in_run_;
    spdlog::warn("straggler: {}", tally_.describe(rank));
  }
  sample_later();
}

void StragglerSampler::add_marks(LiveMarks& marks) const {
  marks.slow_ranks.insert(named_.begin(), named_.end());
  marks.stragglers_named += named_in_run_;
}

}  // namespace gangrun::doctor
