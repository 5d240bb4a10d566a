#include "doctor/watch/file_timer_watch.hpp"

#include "util/env.hpp"
#include "util/signals.hpp"
#include "util/temp_dir.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

namespace gangrun::doctor {

std::unique_ptr<FileTimerWatch> FileTimerWatch::open(boost::asio::io_context& io,
                                                     const launch::LaunchPlan& plan,
                                                     supervise::Gang& gang, StackReader& reader,
                                                     std::function<void()> reading_ended) {
  // torchrun's agent names the pipe when the user did not (and tells the workers).
  std::string path = env_lookup(plan.host_env, "TORCHELASTIC_TIMER_FILE")
                         .value_or(temp_dir(plan.host_env) + "/watchdog_timer_gangrun_" +
                                   std::to_string(::getpid()));
  std::unique_ptr<FileTimerWatch> watch(new FileTimerWatch(gang, reader, std::move(reading_ended)));
  auto opened = FileTimers::open(
      io, path, [watch = watch.get()](const FileTimers::Expired& e) { watch->on_expired(e); });
  if (!opened) {
    spdlog::warn("{}; the workers' FileTimerClient will not reach gangrun",
                 opened.error().describe());
    return nullptr;
  }
  watch->timers_ = std::move(*opened);
  return watch;
}

EnvMap FileTimerWatch::worker_env(const std::string&) {
  return {{"TORCHELASTIC_TIMER_FILE", timers_->path()}};
}

void FileTimerWatch::round_started(const RoundStart&) {
  timers_->clear();
  round_over_ = false;
  expired_.reset();
}

void FileTimerWatch::add_findings(report::DoctorFindings& findings) const {
  if (expired_) findings.timer_expired = *expired_;
}

void FileTimerWatch::on_expired(const FileTimers::Expired& expired) {
  std::optional<int> rank;
  for (const supervise::Gang::LiveWorker& worker : gang_.live_worker_list()) {
    if (worker.pid == expired.pid) rank = worker.rank;
  }
  if (!rank || round_over_) {
    spdlog::debug("file timers: pid {} is not a running worker; its timer '{}' is dropped",
                  expired.pid, expired.scope_id);
    return;
  }
  const std::string kill_text = expired.signal > 0
                                    ? "killing it with " + signals::name(expired.signal)
                                    : "not killing it (its signal is 0)";
  spdlog::warn(
      "rank {} (pid {}): its timer '{}' (torch.distributed.elastic.timer) expired {} "
      "ago; reading every rank's stack, then {}",
      *rank, expired.pid, expired.scope_id, seconds_text(expired.late_s), kill_text);
  auto act = [this, expired] {
    if (expired.signal > 0) gang_.signal_worker(expired.pid, expired.signal);
  };
  report::TimerExpiredFinding timer{.rank = *rank,
                                    .pid = expired.pid,
                                    .scope_id = expired.scope_id,
                                    .signal = expired.signal,
                                    .stacks = std::nullopt};
  if (reader_.running()) {
    expired_ = std::move(timer);
    return act();
  }
  reader_.read(live_targets(gang_), k_failure_read_limit,
               [this, act, timer](const std::vector<doctor::RankStacks>& ranks) mutable {
                 timer.stacks = reader_.tell(ranks, "timer-stacks.txt",
                                             "where the ranks were when the timer expired:");
                 expired_ = std::move(timer);
                 if (round_over_) return reading_ended_();
                 act();
               });
}

}  // namespace gangrun::doctor
