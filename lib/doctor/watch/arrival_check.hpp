// --arrival-timeout: every second until every rank of this node is at the
// round's store; once the first rank has waited there for the timeout, the
// ranks not there yet are named (on the console and in the report's
// late_to_store). Only a Python program's ranks are expected at the store.
#pragma once

#include "doctor/watch/watch.hpp"
#include "store/server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace gangrun::doctor {

class ArrivalCheck final : public Watch {
 public:
  // Everything given outlives the check. store: the one this agent hosts,
  // whose requests tell when the first rank of any node arrived; else null.
  ArrivalCheck(boost::asio::io_context& io, const launch::LaunchPlan& plan,
               const supervise::Gang& gang, const store::Server* store);

  void round_started(const RoundStart& round) override;
  void round_ended() override;
  void add_findings(report::DoctorFindings& findings) const override;

 private:
  void check();

  const launch::LaunchPlan& plan_;
  const supervise::Gang& gang_;
  const store::Server* store_server_;
  boost::asio::steady_timer timer_;
  // Per round.
  RoundStart round_;
  bool round_over_ = false;
  std::optional<std::chrono::steady_clock::time_point> first_arrival_;  // at the store
  std::optional<report::LateToStoreFinding> late_;
};

}  // namespace gangrun::doctor
