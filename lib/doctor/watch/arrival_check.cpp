#include "doctor/watch/arrival_check.hpp"

#include "doctor/store_peers.hpp"
#include "util/strings.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace gangrun::doctor {

ArrivalCheck::ArrivalCheck(boost::asio::io_context& io, const launch::LaunchPlan& plan,
                           const supervise::Gang& gang, const store::Server* store)
    : plan_(plan), gang_(gang), store_server_(store), timer_(io) {}

void ArrivalCheck::round_started(const RoundStart& round) {
  round_ = round;
  round_over_ = false;
  first_arrival_.reset();
  late_.reset();
  if (!round_.store.empty() && runs_python(plan_)) check();
}

void ArrivalCheck::round_ended() {
  round_over_ = true;
  timer_.cancel();
}

void ArrivalCheck::add_findings(report::DoctorFindings& findings) const {
  if (late_) findings.late_to_store = *late_;
}

void ArrivalCheck::check() {
  const auto timeout = steady(*plan_.doctor.arrival_timeout_s);
  auto look_again = [this, timeout] {
    timer_.expires_after(
        std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(1), timeout / 2));
    timer_.async_wait([this](const boost::system::error_code& error) {
      if (!error && !round_over_) check();
    });
  };
  std::vector<RankStacks> ranks;
  for (const supervise::Gang::LiveWorker& worker : gang_.live_worker_list()) {
    ranks.push_back({.rank = worker.rank,
                     .host = plan_.host,
                     .pid = worker.pid,
                     .threads = {},
                     .unavailable = std::nullopt,
                     .stopped = std::nullopt});
  }
  if (ranks.empty()) return look_again();  // not started yet, or all ended
  std::optional<std::vector<int>> missing =
      store_arrivals(ranks, round_.store, runs_python(plan_)).missing;
  if (!missing || missing->empty()) return;  // every rank here is at the store
  // The others have waited since the first arrival: a rank of this node,
  // or, on the store's own host, a request of any rank of any node.
  auto now = std::chrono::steady_clock::now();
  if (!first_arrival_ && missing->size() < ranks.size()) first_arrival_ = now;
  if (!first_arrival_ && store_server_ && store_server_->last_round_request() &&
      *store_server_->last_round_request() >= round_.at) {
    first_arrival_ = *store_server_->last_round_request();
  }
  if (!first_arrival_ || now - *first_arrival_ < timeout) return look_again();
  const std::vector<int>& late = *missing;
  std::vector<std::string> named;
  for (const RankStacks& rank : ranks) {
    if (std::find(late.begin(), late.end(), rank.rank) == late.end()) continue;
    named.push_back(fmt::format("rank {} ({}, pid {})", rank.rank, rank.host, rank.pid));
  }
  spdlog::warn(
      "{} {} not connected to the store at {}, while other ranks have waited there for {} "
      "(--arrival-timeout): they wait for {} in init_process_group (or a rendezvous); `gangrun "
      "stacks` shows where {} {}",
      strings::join(named, ", "), late.size() == 1 ? "has" : "have", round_.store,
      seconds_text(*plan_.doctor.arrival_timeout_s), late.size() == 1 ? "it" : "them",
      late.size() == 1 ? "it" : "they", late.size() == 1 ? "is" : "are");
  late_ = report::LateToStoreFinding{.after_s = *plan_.doctor.arrival_timeout_s,
                                     .host = plan_.host,
                                     .store = round_.store,
                                     .ranks = late};
}

}  // namespace gangrun::doctor
