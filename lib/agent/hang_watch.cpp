#include "agent/hang_watch.hpp"

#include <algorithm>

namespace gangrun::agent {

HangWatch::HangWatch(boost::asio::io_context& io, Clock::duration timeout, WorkersFn workers,
                     HangHandler on_hang)
    : timer_(io), timeout_(timeout), workers_(std::move(workers)), on_hang_(std::move(on_hang)) {}

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

void HangWatch::check() {
  Clock::time_point last = since_;
  for (const supervise::Gang::LiveWorker& worker : workers_()) {
    if (worker.last_line_at) last = std::max(last, *worker.last_line_at);
  }
  Clock::time_point now = Clock::now();
  if (now - last < timeout_ || now < not_before_) {
    return wait_until(std::max(last + timeout_, not_before_));
  }
  on_hang_(now - last);
}

}  // namespace gangrun::agent
