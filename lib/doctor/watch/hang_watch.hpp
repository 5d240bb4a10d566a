// The hang watch (--hang-timeout): tells the agent when no rank of the
// round has made progress for the timeout. Progress is a line of output
// from any rank (supervise::Gang::LiveWorker::last_line_at); the round's
// start counts as the first. A single timer waits for the moment the
// silence would reach the timeout and, when lines came meanwhile, waits
// again from the last one, so a busy gang costs one wake-up per timeout.
#pragma once

#include "supervise/gang.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <vector>

namespace gangrun::doctor {

class HangWatch {
 public:
  using Clock = std::chrono::steady_clock;
  // How long the gang has been silent when the hang is reported.
  using HangHandler = std::function<void(Clock::duration silent_for)>;
  using WorkersFn = std::function<std::vector<supervise::Gang::LiveWorker>()>;

  // io outlives the watch; workers() lists the round's live workers.
  HangWatch(boost::asio::io_context& io, Clock::duration timeout, WorkersFn workers,
            HangHandler on_hang);

  // Watches from now (a round starts); on_hang runs once, from a handler,
  // until the next start() or watch_again().
  void start();
  // After a hang was reported and the gang goes on: the next report comes
  // no sooner than a timeout from now, and still counts the silence from
  // the last progress.
  void watch_again();
  void stop();

  // The latest sign of life of workers, or since when none came.
  static Clock::time_point last_progress(Clock::time_point since,
                                         const std::vector<supervise::Gang::LiveWorker>& workers);

 private:
  void wait_until(Clock::time_point deadline);
  void check();

  boost::asio::steady_timer timer_;
  Clock::duration timeout_;
  WorkersFn workers_;
  HangHandler on_hang_;
  Clock::time_point since_;       // the round's start: progress before any line
  Clock::time_point not_before_;  // no report before this
};

}  // namespace gangrun::doctor
