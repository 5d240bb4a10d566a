#include "doctor/watch/silence_exchange.hpp"

#include <algorithm>

namespace gangrun::doctor {

std::chrono::milliseconds SilenceExchange::tick_for(double timeout_s) {
  auto quarter = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 250));
  return std::clamp(quarter, std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
}

SilenceExchange::SilenceExchange(boost::asio::io_context& io, Channel channel,
                                 std::chrono::milliseconds tick, const DoctorRound& round,
                                 OwnProgressFn own_progress)
    : timer_(io),
      channel_(std::move(channel)),
      tick_(tick),
      round_(round),
      own_progress_(std::move(own_progress)) {}

void SilenceExchange::round_started() {
  node_progress_.clear();
  exchange();
}

void SilenceExchange::exchange() {
  if (!round_.nodes || !round_.watching()) return;
  Clock::time_point now = Clock::now();
  if (round_.nodes->lead) {
    // A silence was told up to a tick before it is read: counted from the
    // reading, the lead declares a hang late, never early.
    channel_.read([this, now](const Silences& told) {
      if (round_.watching()) take(told, now);
    });
  } else {
    channel_.tell(std::chrono::duration_cast<std::chrono::milliseconds>(now - own_progress_()));
  }
  timer_.expires_after(tick_);
  timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error) exchange();
  });
}

void SilenceExchange::take(const Silences& told, Clock::time_point read_at) {
  for (const auto& [id, silence] : told) {
    if (silence) {
      node_progress_[id] = read_at - *silence;
    } else {
      node_progress_.erase(id);
    }
  }
}

std::vector<SilenceExchange::Clock::time_point> SilenceExchange::others_progress(
    const std::vector<std::string>& others, Clock::time_point now) const {
  std::vector<Clock::time_point> progress;
  for (const std::string& id : others) {
    auto told = node_progress_.find(id);
    progress.push_back(told == node_progress_.end() ? now : told->second);
  }
  return progress;
}

}  // namespace gangrun::doctor
