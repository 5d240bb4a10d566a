// The hang watch (--hang-timeout): tells the agent when no rank of the
// round has made progress for the timeout. Progress is any sign of life the
// doctor knows of (HangWatch::Progress: a rank's line of output or file
// timer request, a request to the store, another node's ranks' progress; a
// progress bar's redraw that did not advance is none: logmux/line_progress.hpp);
// the round's start counts as the first. While the round is still starting
// (start_watch.hpp: a rank is importing, or not yet at the store) the gang is
// not silent, whatever it prints: the start is --start-timeout's, and the
// silence counts from the moment the start was seen to end. A single timer waits for the moment the
// silence would reach the timeout and, when lines came meanwhile, waits
// again from the last one, so a busy gang costs one wake-up per timeout.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <vector>

namespace gangrun::doctor {

class HangWatch {
 public:
  using Clock = std::chrono::steady_clock;
  // How long the gang has been silent when the hang is reported.
  using HangHandler = std::function<void(Clock::duration silent_for)>;

  // When the gang last showed a sign of life, as far as the doctor knows.
  struct Progress {
    // The live workers' signs of life: their last lines, their last file
    // timer requests (none yet: not listed).
    std::vector<Clock::time_point> workers;
    // The last request a worker made to the store this agent hosts.
    std::optional<Clock::time_point> store_request;
    // The lead of several nodes: when each other node's ranks last made progress.
    std::vector<Clock::time_point> other_nodes;
    // This node's ranks are still starting (a node that is not the lead
    // tells it no silence meanwhile); when not, since when they have all started.
    bool starting = false;
    std::optional<Clock::time_point> started_at;

    // The latest of them all, or since when none came.
    Clock::time_point latest(Clock::time_point since) const;
    // What a node that is not the lead tells it (silence_exchange.hpp):
    // its latest progress, or now while its ranks are starting.
    Clock::time_point told(Clock::time_point since, Clock::time_point now) const {
      return starting ? now : latest(since);
    }
  };
  using ProgressFn = std::function<Progress()>;
  // The gang has been silent for the timeout, but is still starting: no hang.
  using StartingHandler = std::function<void(Clock::duration silent_for)>;

  // io outlives the watch; progress() says the round's progress so far;
  // while_starting (may be empty) is told once per start().
  HangWatch(boost::asio::io_context& io, Clock::duration timeout, ProgressFn progress,
            HangHandler on_hang, StartingHandler while_starting = {});

  // Watches from now (a round starts); on_hang runs once, from a handler,
  // until the next start() or watch_again().
  void start();
  // After a hang was reported and the gang goes on: the next report comes
  // no sooner than a timeout from now, and still counts the silence from
  // the last progress.
  void watch_again();
  void stop();

 private:
  void wait_until(Clock::time_point deadline);
  void check();

  boost::asio::steady_timer timer_;
  Clock::duration timeout_;
  ProgressFn progress_;
  HangHandler on_hang_;
  StartingHandler while_starting_;
  bool told_starting_ = false;    // since start()
  Clock::time_point since_;       // the round's start: progress before any line
  Clock::time_point not_before_;  // no report before this
};

}  // namespace gangrun::doctor
