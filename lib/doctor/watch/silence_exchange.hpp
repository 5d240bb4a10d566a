// Across nodes, the gang's silence in one place (gang_doctor.hpp): every
// tick, a node that is not the round's lead tells the lead how long its
// ranks have been silent, and the lead reads what the others told and keeps
// when each node's ranks last made progress, which its hang watch counts
// (hang_watch.hpp). A silence is an age, not a time, since the nodes'
// clocks need not agree.
#pragma once

#include "doctor/watch/doctor_link.hpp"
#include "doctor/watch/doctor_round.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gangrun::doctor {

class SilenceExchange {
 public:
  using Clock = std::chrono::steady_clock;
  using Silences = DoctorLink::ByAgent<std::chrono::milliseconds>;
  // How the silences travel (DoctorLink::publish_silence, read_silences).
  struct Channel {
    std::function<void(std::chrono::milliseconds silent_for)> tell;
    std::function<void(std::function<void(Silences)> done)> read;
  };
  // This node's ranks' last progress (the round's start when none came).
  using OwnProgressFn = std::function<Clock::time_point()>;

  // How often a node tells the lead its silence (and the lead reads the
  // others'), for --hang-timeout timeout_s: a hang is declared at most this
  // late.
  static std::chrono::milliseconds tick_for(double timeout_s);

  // Everything given outlives the exchange.
  SilenceExchange(boost::asio::io_context& io, Channel channel, std::chrono::milliseconds tick,
                  const DoctorRound& round, OwnProgressFn own_progress);

  // A round of several nodes began (round.nodes): the others' progress is
  // forgotten, and the exchange goes on every tick while round.watching().
  void round_started();
  void stop() { timer_.cancel(); }

  // The lead: when each of others last made progress, as far as it has
  // told; one that has not told counts as making progress at now.
  std::vector<Clock::time_point> others_progress(const std::vector<std::string>& others,
                                                 Clock::time_point now) const;

 private:
  void exchange();
  // The lead: silences told, as read at read_at.
  void take(const Silences& told, Clock::time_point read_at);

  boost::asio::steady_timer timer_;
  Channel channel_;
  std::chrono::milliseconds tick_;
  const DoctorRound& round_;
  OwnProgressFn own_progress_;
  std::map<std::string, Clock::time_point> node_progress_;  // the lead's, per round
};

}  // namespace gangrun::doctor
