#include "doctor/watch/hang_watch.hpp"

#include <algorithm>

namespace gangrun::doctor {

HangWatch::HangWatch(boost::asio::io_context& io, Clock::duration timeout, ProgressFn progress,
                     HangHandler on_hang)
    : timer_(io), timeout_(timeout), progress_(std::move(progress)), on_hang_(std::move(on_hang)) {}

void HangWatch::start() {
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
  return last;
}

void HangWatch::check() {
  Clock::time_point last = progress_().latest(since_);
  Clock::time_point now = Clock::now();
  if (now - last < timeout_ || now < not_before_) {
    return wait_until(std::max(last + timeout_, not_before_));
  }
  on_hang_(now - last);
}

}  // namespace gangrun::doctor
