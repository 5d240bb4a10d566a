#include "doctor/watch/hang_watch.hpp"

#include <algorithm>

namespace gangrun::doctor {

HangWatch::HangWatch(boost::asio::io_context& io, Clock::duration timeout, ProgressFn progress,
                     HangHandler on_hang, StartingHandler while_starting)
    : timer_(io),
      timeout_(timeout),
      progress_(std::move(progress)),
      on_hang_(std::move(on_hang)),
      while_starting_(std::move(while_starting)) {}

void HangWatch::start() {
  told_starting_ = false;
  since_ = Clock::now();
  not_before_ = since_;
  wait_until(since_ + timeout_);
}

void HangWatch::watch_again() {
  not_before_ = Clock::now() + timeout_;
  wait_until(not_before_);
}

void HangWatch::stop() { timer_.cancel(); }

void HangWatch::wait_until(Clock::time_point deadline) {
  timer_.expires_at(deadline);
  timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error) check();
  });
}

HangWatch::Clock::time_point HangWatch::Progress::latest(Clock::time_point since) const {
  Clock::time_point last = since;
  for (Clock::time_point worker : workers) last = std::max(last, worker);
  if (store_request) last = std::max(last, *store_request);
  for (Clock::time_point node : other_nodes) last = std::max(last, node);
  if (started_at) last = std::max(last, *started_at);
  return last;
}

void HangWatch::check() {
  Progress progress = progress_();
  Clock::time_point now = Clock::now();
  if (progress.starting) {
    Clock::duration silent_for = now - progress.latest(since_);
    if (!told_starting_ && while_starting_ && silent_for >= timeout_) {
      told_starting_ = true;
      while_starting_(silent_for);
    }
    // The start's end is seen a tick late at most, and counts as progress:
    // looking again in a second declares a hang late, never early.
    return wait_until(
        std::max(now + std::min<Clock::duration>(timeout_, std::chrono::seconds(1)), not_before_));
  }
  Clock::time_point last = progress.latest(since_);
  if (now - last < timeout_ || now < not_before_) {
    return wait_until(std::max(last + timeout_, not_before_));
  }
  on_hang_(now - last);
}

}  // namespace gangrun::doctor
